package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// H1, H4, E9, K1: a tool inside a sandboxed run (the system's curl, as an agent's shell tool runs
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

	// H1-H7, K1: the run's receipts are in B's store, vouched for by its turn_completed
	// entry: the refused CONNECT with its code and rule, and the agent's model request with
	// its status and pinned model. anet show lists them, the export carries them, and verify
	// checks their digest.
	show := b.mustAnet("show", id)
	for _, want := range []string{"receipts sha256:", "1 tunnel(s), 1 model request(s), 1 refused",
		"tunnel files.example.com:443 → -", "refused: egress_host_not_allowed (H4)",
		"model POST /v1/messages → 200, model " + arPinned} {
		if !strings.Contains(show, want) {
			t.Errorf("anet show lacks %q:\n%s", want, show)
		}
	}
	var sawReceipts bool
	for _, line := range strings.Split(strings.TrimSpace(b.mustAnet("evidence", "export", "--jsonl")), "\n") {
		var e struct {
			Kind     string
			Receipts *struct {
				Tunnels []struct{ Host, End, Code, Rule string }
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		if e.Kind == "turn_completed" && e.Receipts != nil && len(e.Receipts.Tunnels) == 1 {
			tn := e.Receipts.Tunnels[0]
			sawReceipts = tn.Host == "files.example.com" && tn.End == "refused" && tn.Code == "egress_host_not_allowed" && tn.Rule == "H4"
		}
	}
	if !sawReceipts {
		t.Error("the JSONL export has no turn_completed with the refused tunnel's receipt")
	}
	if out := b.mustAnet("evidence", "verify"); !strings.Contains(out, "evidence chain verified") {
		t.Errorf("anet evidence verify: %s", out)
	}
}
