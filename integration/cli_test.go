package integration

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
)

const hostileText = testkit.HostileText

func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if c := testkit.RawTerminalControl(out); c != "" {
		t.Errorf("%s wrote a raw %q to the terminal:\n%q", what, c, out)
	}
}

// U1: a peer's task and reply, with escape sequences, 8-bit controls, DEL and bidi overrides,
// reach `anet inbox`, `anet show` and `anet evidence show` only as visible text; --json keeps
// the exact text.
func TestPeerTextNeverReachesTerminalRaw(t *testing.T) {
	a, b := newNode(t, nodeOptions{}), newNode(t, manualReplies(t))
	a.start()
	b.start()
	sb := b.status()
	a.mustAnet("peer", "add", sb.AID, sb.ListenAddr)
	id := strings.TrimSpace(a.mustAnet("send", "--to", sb.AID, hostileText))
	testkit.WaitFor(t, "task at B", func() bool { return len(b.inbox()) == 1 })

	inbox := b.mustAnet("inbox")
	assertTerminalSafe(t, "anet inbox", inbox)
	if !strings.Contains(inbox, `please\x1b]52;c;ZXZpbA==\x07`) || strings.Count(inbox, "\n") != 2 {
		t.Errorf("anet inbox does not show the task visibly on one line:\n%s", inbox)
	}
	show := b.mustAnet("show", id)
	assertTerminalSafe(t, "anet show", show)
	for _, want := range []string{
		"  | please\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;owned\\x07\\r\n",
		"  | state: answered\\u009b31m\\x7f\\u202egnp.exe\n",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("anet show lacks %q:\n%s", want, show)
		}
	}
	if got := b.show(id)[0].Text; got != hostileText {
		t.Errorf("anet show --json text = %q, want the exact text %q", got, hostileText)
	}
	b.mustAnet("reply", id, "done\x1b[2J\u202e")
	testkit.WaitFor(t, "reply at A", func() bool { return a.show(id)[0].Answer != nil })
	out := a.mustAnet("show", id)
	assertTerminalSafe(t, "anet show (requester)", out)
	if !strings.Contains(out, "  | done\\x1b[2J\\u202e") {
		t.Errorf("requester's anet show lacks the escaped reply:\n%s", out)
	}
	b.mustAnet("evidence", "note", "note\x1b]0;t\x07")
	assertTerminalSafe(t, "anet evidence show", b.mustAnet("evidence", "show"))
}

// CLI polish: flags after positional arguments, an object from show --json, the nearest
// command for a typo, and its own code for an unknown id.
func TestCLIFlagsAnywhereAndSuggestions(t *testing.T) {
	a, b := newNode(t, nodeOptions{}), newNode(t, nodeOptions{})
	a.start()
	b.start()
	sb := b.status()
	a.mustAnet("peer", "add", sb.AID, sb.ListenAddr)
	// --to after the text, --json after the id.
	id := strings.TrimSpace(a.mustAnet("send", "hello", "--to", sb.AID))
	out := a.mustAnet("show", id, "--json")
	var it control.Interaction
	if err := json.Unmarshal([]byte(out), &it); err != nil || it.Interaction != id {
		t.Fatalf("anet show ID --json = %q (%v), want one JSON object for %s", out, err, id)
	}
	if strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("anet show --json printed an array: %s", out)
	}
	// A global flag after the command is the global flag.
	if out := a.mustAnet("config", "get", "listen", "--config", a.path("config", "anet", "config.yaml")); !strings.Contains(out, "127.0.0.1:") {
		t.Fatalf("anet config get listen --config FILE = %q", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, `unknown command "stauts"; did you mean "status"?`},
		{[]string{"evidence", "verfy"}, `anet evidence: unknown command "verfy"; did you mean "verify"?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (anet --help lists the commands)`},
	} {
		_, errOut, err := a.anet(tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("anet %v = %v, %q; want exit 2 and %q", tc.args, err, errOut, tc.want)
		}
	}
}
