package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
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

// F1, F2: a node set up to answer untrusted peers in the sandbox, with no agent installed and
// no key for its upstream, says both at start; a task it cannot answer is refused to the
// requester with sandbox_unavailable (not left waiting), and the operator sees the reason and
// its fix in anet show, anet inbox and anet status.
func TestSandboxTurnWithNoAgentIsRefusedAndTheOperatorToldWhy(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec, keys: "openai: sk-not-for-claude\n"})
	if err := os.Remove(b.path("agent", "claude")); err != nil {
		t.Fatal(err)
	}
	a, _, aidB := startPair(t, b)
	testkit.WaitFor(t, "anetd's start warnings", func() bool {
		l := b.logs.String()
		return strings.Contains(l, "code=agent_missing") && strings.Contains(l, "code=no_api_key")
	})

	id := send(t, a, aidB, "what is 6*7?")
	if ans := answerAt(t, a, id); ans.Type != "refusal" || ans.Code != "sandbox_unavailable" {
		t.Fatalf("the requester got %+v, want a sandbox_unavailable refusal", ans)
	}
	show := b.mustAnet("show", id)
	for _, want := range []string{"refusal (", "sandbox_unavailable", "reason: agent_missing: ", "detail: claude", "install"} {
		if !strings.Contains(show, want) {
			t.Errorf("anet show at B = %q, want it to say %q", show, want)
		}
	}
	if inbox := b.mustAnet("inbox"); !strings.Contains(inbox, "refused (agent_missing)") {
		t.Errorf("anet inbox at B = %q, want the task refused (agent_missing)", inbox)
	}
	if st := b.status(); !hasReason(st, "agent_missing") {
		t.Errorf("anet status at B: reasons %+v, want agent_missing", st.AutoReply.Reasons)
	}
	if st := b.mustAnet("status"); !strings.Contains(st, "agent_missing") {
		t.Errorf("anet status at B = %q, want agent_missing", st)
	}
}
