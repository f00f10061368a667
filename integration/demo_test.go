package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/demo"
)

// demoBin is a directory laid out as `make demo` lays out bin/demo: anetd and anet-egress of
// the demo build (anettest), the release anet and anet-sandboxd, and anet-demo.
func demoBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, build := range map[string]string{
		"anetd": "anetd-test", "anet-egress": "anet-egress-test", "anet": "anet", "anet-sandboxd": "anet-sandboxd", "anet-demo": "anet-demo",
	} {
		if err := os.Symlink(testharness.Bin(t, build), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// make demo: the node's main job in one command with nothing but bubblewrap: two nodes on
// loopback, a task answered in the sandbox by the demo agent through the run's endpoint and
// the stand-in model, the reply, both nodes' evidence and the run's usage, and nothing left.
func TestMakeDemo(t *testing.T) {
	bin := demoBin(t)
	cmd := exec.Command(filepath.Join(bin, "anet-demo"), "--bin", bin)
	// As on an operator's machine: the demo's directory is made in /tmp.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + t.TempDir(), "TMPDIR=/tmp"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("make demo failed: %v\n%s", err, out.String())
		}
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("make demo did not finish in 5 minutes:\n%s", out.String())
	}
	text := out.String()
	for _, want := range []string{
		"[1] a stand-in model service, for this demo only",
		"B does not trust A, so A's task runs in B's sandbox",
		"turn_started    { \"agent\": \"claude\", \"counted\": true, \"route\": \"sandbox\"",
		"A has B's reply",
		"  | Hello from the demo's stand-in model (not a real model). You asked: \"" + demo.Task + "\"",
		"task_sent", "reply_received", "task_received", "turn_started", "turn_completed", "run_counted", "reply_sent",
		"anet evidence verify: every link and signature checks",
		"model requests: 1 through the endpoint, 1 forwarded upstream (answered 200×1)",
		"the stand-in model got 1 request(s), each with B's key",
		"stopped node a", "stopped node b", "removed /",
		"demo done",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo did not say %q:\n%s", want, text)
		}
	}
	root := regexp.MustCompile(`removed (/\S+)`).FindStringSubmatch(text)
	if root == nil {
		t.Fatalf("the demo did not say what it removed:\n%s", text)
	}
	if _, err := os.Stat(root[1]); !os.IsNotExist(err) {
		t.Fatalf("the demo left %s behind (%v)", root[1], err)
	}
}

// The demo's stand-in model cannot be used by a real node: it listens on a unix socket only,
// and only a demo build's redirect hook (ANET_TEST_REDIRECTS) sends a model host there. A
// release anetd does not hand that variable to its egress helper, and the release anet-egress
// has no code that reads it; the demo build does both (the control).
func TestDemoStandInUnreachableFromARelease(t *testing.T) {
	dir, err := os.MkdirTemp("", "dm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, err := demo.StartStandIn(filepath.Join(dir, "model.sock"), filepath.Join(dir, "ca.pem"), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, err := os.Stat(s.Socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("the stand-in's socket %s: %v", s.Socket, err)
	}
	redirect := "ANET_TEST_REDIRECTS=api.anthropic.com:443=unix:" + s.Socket
	for _, tc := range []struct {
		name, anetd, egress string
		reaches             bool
	}{
		{"release build", "anetd", "anet-egress", false},
		{"demo build", "anetd-test", "anet-egress-test", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(testharness.Bin(t, tc.egress))
			if err != nil {
				t.Fatal(err)
			}
			if has := bytes.Contains(b, []byte("ANET_TEST_REDIRECTS")); has != tc.reaches {
				t.Fatalf("%s has the redirect hook: %v, want %v", tc.egress, has, tc.reaches)
			}
			n := newNode(t, nodeOptions{extraEnv: []string{redirect}})
			helpers := n.path("helpers")
			os.MkdirAll(helpers, 0o755)
			os.Symlink(testharness.Bin(t, tc.egress), filepath.Join(helpers, "anet-egress"))
			os.Symlink(testharness.Bin(t, "anet-sandboxd"), filepath.Join(helpers, "anet-sandboxd"))
			arMu.Lock()
			arMeta[n] = arInfo{bin: tc.anetd, helpers: helpers}
			arMu.Unlock()
			n.arStart()
			env := string(readProc(t, n.helper("egress"), "environ"))
			if got := strings.Contains(env, redirect); got != tc.reaches {
				t.Fatalf("%s's egress helper got the redirect: %v, want %v", tc.anetd, got, tc.reaches)
			}
		})
	}
	if s.Requests() != 0 {
		t.Fatalf("the stand-in got %d requests", s.Requests())
	}
}
