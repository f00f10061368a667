package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// doctorJSON is `anet doctor --json`: the shared check shape (pkg/check) and the node.
type doctorJSON struct {
	check.Report
	Limits string `json:"limits"`
	Node   *struct {
		AID string `json:"aid"`
	} `json:"node"`
}

// group returns the checks whose names start with group and a dot, by the rest of the name.
func (d doctorJSON) group(group string) map[string]check.Check {
	out := map[string]check.Check{}
	for _, c := range d.Checks {
		if name, ok := strings.CutPrefix(c.Name, group+"."); ok {
			out[name] = c
		}
	}
	return out
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
	probe := d.group("probe")
	if !d.OK || len(probe) != 5 || !probe["loopback"].OK || len(d.group("host")) != 2 || len(d.group("node")) != 2 || d.Node == nil || d.Node.AID == "" {
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
	if d.OK || d.group("host")["bubblewrap"].Code != reasons.NoBwrap || d.group("probe")["sandbox"].Code != reasons.NoBwrap {
		t.Fatalf("doctor without bwrap = %s", out)
	}
}
