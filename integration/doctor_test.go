package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

type doctorJSON struct {
	OK   bool `json:"ok"`
	Host []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
		Code string `json:"code"`
	} `json:"host"`
	Probe *struct {
		OK     bool   `json:"ok"`
		Code   string `json:"code"`
		Limits string `json:"limits"`
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	} `json:"probe"`
	Node *struct {
		AID string `json:"aid"`
	} `json:"node"`
}

func listFiles(t *testing.T, root string) []string {
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// S8, F2: anet doctor checks the host, runs the S7 probe through anet-sandboxd and reads the
// node's state; A1: --apparmor-profile prints the profile and writes no file.
func TestDoctor(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	out, errOut, err := n.anet("doctor", "--json")
	if err != nil {
		t.Fatalf("anet doctor on a working host: %v\n%s%s", err, out, errOut)
	}
	var d doctorJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if !d.OK || d.Probe == nil || !d.Probe.OK || len(d.Probe.Checks) != 5 || d.Node == nil || d.Node.AID == "" {
		t.Fatalf("doctor = %s", out)
	}

	before := listFiles(t, n.root)
	prof, _, err := n.anet("doctor", "--apparmor-profile")
	if err != nil || !strings.Contains(prof, "profile anet-bwrap /usr/bin/bwrap") || !strings.Contains(prof, "audit deny capability,") {
		t.Fatalf("--apparmor-profile = %v:\n%s", err, prof)
	}
	if after := listFiles(t, n.root); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("--apparmor-profile wrote files: before %d, after %d", len(before), len(after))
	}

	// Without bubblewrap on PATH: no_bwrap from the host check and from the probe, exit 1.
	saved := n.env
	n.env = nil
	for _, kv := range saved {
		if strings.HasPrefix(kv, "PATH=") {
			kv = "PATH=" + t.TempDir()
		}
		n.env = append(n.env, kv)
	}
	defer func() { n.env = saved }()
	out, _, err = n.anet("doctor", "--json")
	if err == nil {
		t.Fatalf("anet doctor without bwrap exited 0:\n%s", out)
	}
	d = doctorJSON{}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if d.OK || d.Host[0].Code != "no_bwrap" || d.Probe == nil || d.Probe.OK || d.Probe.Code != "no_bwrap" {
		t.Fatalf("doctor without bwrap = %s", out)
	}
}
