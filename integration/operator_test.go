package integration

import (
	"fmt"
	"strings"
	"testing"
)

// C4, U3: what the CLI says when anetd is not there, and when a key only a restart applies is
// set: each message says one thing, with the path and what to do.
func TestCLISaysWhyAnetdCannotBeReachedAndWhatARestartNeeds(t *testing.T) {
	n := newNode(t, nodeOptions{})
	sock := n.path("run", "anet", "control.sock")

	notRunning := func(t *testing.T, why string, args ...string) {
		t.Helper()
		out, errOut, err := n.anet(args...)
		if err == nil {
			t.Fatalf("anet %s with no anetd = exit 0, %q; want a failure", strings.Join(args, " "), out)
		}
		for _, want := range []string{"anetd is not running", why, "start it with `anetd`", "reason: node_not_running"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("anet %s with no anetd said %q, want it to say %q", strings.Join(args, " "), errOut, want)
			}
		}
		for _, bad := range []string{"dial unix", "kept the settings"} {
			if strings.Contains(errOut, bad) {
				t.Errorf("anet %s with no anetd said %q; it must not say %q", strings.Join(args, " "), errOut, bad)
			}
		}
	}
	t.Run("never started", func(t *testing.T) {
		notRunning(t, "no control socket at "+sock, "status")
		notRunning(t, "no control socket at "+sock, "reload")
	})

	n.start()
	t.Run("config set of a restart-only key", func(t *testing.T) {
		listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		out, errOut, err := n.anet("config", "set", "listen", listen)
		if err != nil {
			t.Fatalf("anet config set listen = %v %q %q", err, out, errOut)
		}
		if !strings.Contains(out, "listen = "+listen+" written to") || !strings.Contains(out, "listen takes effect when anetd restarts") {
			t.Fatalf("anet config set listen said %q, want written and that it takes effect at restart", out)
		}
		if strings.Contains(out, "applied") || strings.Count(out, "\n") != 1 {
			t.Fatalf("anet config set listen said %q, want one line that does not say applied", out)
		}
	})

	n.kill9()
	t.Run("after anetd died", func(t *testing.T) {
		notRunning(t, "left from an anetd that has stopped", "status")
		notRunning(t, "left from an anetd that has stopped", "reload")
	})
}
