package integration

import (
	"strings"
	"testing"
)

// H1, H4, E9: a tool inside a sandboxed run (the system's curl, as an agent's shell tool runs
// it) finds the node as its HTTPS proxy in the environment the node built, asks it for a
// host that is not on the allow-list, and is refused by the CONNECT proxy with a 403 that
// names the code and the rule, where it can read them: it never meets a name that merely
// fails to resolve, which invites other ways out.
func TestToolInTheSandboxReadsTheEgressRefusal(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec + "  egress_allow: [pypi.org]\n"})
	a, _, aidB := startPair(t, b)

	id := send(t, a, aidB, "fetch it: CURL files.example.com please")
	ans := answerAt(t, a, id)
	if ans.Type != "reply" {
		t.Fatalf("A's answer = %+v, want the agent's reply with curl's output", ans)
	}
	for _, want := range []string{
		"CONNECT files.example.com:443", // curl used the node's proxy from its environment
		"< HTTP/1.1 403",                // the CONNECT proxy refused it before any dial
		"egress_host_not_allowed",       // by the allow-list rule, named by its code
		"curl exit 56",                  // and curl says the tunnel failed (not a DNS error, 6)
	} {
		if !strings.Contains(ans.Text, want) {
			t.Errorf("curl's output in the answer lacks %q:\n%s", want, ans.Text)
		}
	}
	if strings.Contains(ans.Text, "Could not resolve") {
		t.Errorf("curl tried to resolve the name itself:\n%s", ans.Text)
	}
}
