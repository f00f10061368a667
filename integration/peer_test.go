package integration

// Peer transport tests: two real anetd processes on loopback driven through the
// real CLI, and in-process pkg/peer clients as impostors, replayers and load against the
// real listener. Requirement numbers: F1 (what the requester receives), B3/B4 (tasks wait
// in the inbox; refusals carry codes), P1 (trust list keyed on the aid).

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
)

// mustAnet runs the CLI and fails the test on an error.
func (n *testNode) mustAnet(args ...string) string {
	n.t.Helper()
	out, errOut, err := n.anet(args...)
	if err != nil {
		n.t.Fatalf("anet %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (n *testNode) inbox() []control.Interaction {
	n.t.Helper()
	var list []control.Interaction
	if err := json.Unmarshal([]byte(n.mustAnet("inbox", "--json")), &list); err != nil {
		n.t.Fatal(err)
	}
	return list
}

// show returns `anet show --json ID` (one object) as a one-element list.
func (n *testNode) show(id string) []control.Interaction {
	n.t.Helper()
	var it control.Interaction
	if err := json.Unmarshal([]byte(n.mustAnet("show", "--json", id)), &it); err != nil {
		n.t.Fatal(err)
	}
	return []control.Interaction{it}
}

// identity loads the node's key from its data directory, as the node's own process would.
// Tests use it to speak as the node (replays, tampering) with pkg/peer in-process.
func (n *testNode) identity() *identity.Identity {
	n.t.Helper()
	dir := n.path("data", "anet")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		n.t.Fatal(err)
	}
	id, _, err := identity.LoadOrCreate(filepath.Join(dir, "identity.key"))
	if err != nil {
		n.t.Fatal(err)
	}
	return id
}

func (n *testNode) db() *sql.DB {
	n.t.Helper()
	db, err := sql.Open("sqlite", n.path("data", "anet", "anet.db"))
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { db.Close() })
	return db
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func dialNode(t *testing.T, key peer.KeyHolder, n *testNode, st control.Status) *peer.Conn {
	t.Helper()
	cl, err := peer.NewClient(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cl.Dial(context.Background(), st.ListenAddr, st.AID)
	if err != nil {
		t.Fatalf("dial %s: %v", st.ListenAddr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two nodes, real binaries and CLI: A adds B, sends a task; B's operator sees it in the
// inbox and replies with `anet reply`; A's `anet show` has the reply (F1: the requester
// receives the answer).
func TestPeerTaskAndReplyThroughCLI(t *testing.T) {
	a, b := newNode(t, nodeOptions{}), newNode(t, manualReplies(t))
	a.start()
	b.start()
	sa, sb := a.status(), b.status()
	if sb.ListenAddr == "" || strings.HasSuffix(sb.ListenAddr, ":0") {
		t.Fatalf("B's status listen_addr = %q, want the bound address", sb.ListenAddr)
	}
	a.mustAnet("peer", "add", sb.AID, sb.ListenAddr)
	if out := a.mustAnet("peer", "list"); !strings.Contains(out, sb.AID) || !strings.Contains(out, sb.ListenAddr) {
		t.Fatalf("anet peer list = %q, want B", out)
	}
	id := strings.TrimSpace(a.mustAnet("send", "--to", sb.AID, "please list the files\nin /tmp"))
	if err := peer.ValidID("interaction", id); err != nil {
		t.Fatalf("anet send printed %q, want an interaction id: %v", id, err)
	}
	testkit.WaitFor(t, "task in B's inbox", func() bool { return len(b.inbox()) == 1 })
	got := b.inbox()[0]
	if got.Interaction != id || got.Peer != sa.AID || got.Text != "please list the files\nin /tmp" || got.State != "new" || got.Trusted {
		t.Fatalf("B's inbox = %+v, want A's task %s, new, untrusted", got, id)
	}
	if out := b.mustAnet("inbox"); !strings.Contains(out, id) || !strings.Contains(out, "please list the files in /tmp") {
		t.Fatalf("anet inbox = %q, want the task", out)
	}
	b.mustAnet("reply", id, "nothing there")
	if got := b.inbox()[0]; got.State != "answered" || got.Answer == nil || got.Answer.Text != "nothing there" {
		t.Fatalf("B's inbox after reply = %+v, want answered", got)
	}
	testkit.WaitFor(t, "reply at A", func() bool {
		l := a.show(id)
		return len(l) == 1 && l[0].Answer != nil
	})
	sh := a.show(id)[0]
	if sh.Direction != "out" || sh.State != "answered" || sh.Answer.Type != "reply" || sh.Answer.Text != "nothing there" || sh.Peer != sb.AID {
		t.Fatalf("A's show = %+v, want B's reply", sh)
	}
	if out := a.mustAnet("show", id); !strings.Contains(out, "nothing there") || !strings.Contains(out, "please list the files") {
		t.Fatalf("anet show = %q, want the task and the reply", out)
	}
	// B's view of the same interaction shows the reply it sent and its delivery.
	testkit.WaitFor(t, "B's reply delivered", func() bool {
		l := b.show(id)
		return len(l) == 1 && len(l[0].Delivery) == 1 && l[0].Delivery[0].State == "delivered"
	})
	for _, n := range []*testNode{a, b} {
		n.mustAnet("evidence", "verify")
	}
	for _, tc := range []struct {
		node *testNode
		kind string
	}{{a, "task_sent"}, {a, "reply_received"}, {b, "task_received"}, {b, "reply_sent"}} {
		if out := tc.node.mustAnet("evidence", "show", "--kind", tc.kind, "--json"); !strings.Contains(out, id) {
			t.Errorf("evidence of kind %s has no entry for %s", tc.kind, id)
		}
	}

	// Trust is keyed on the aid (P1): B trusts A, and A's next task shows as trusted.
	b.mustAnet("trust", "add", sa.AID)
	if out := b.mustAnet("trust", "list"); strings.TrimSpace(out) != sa.AID {
		t.Fatalf("anet trust list = %q, want A", out)
	}
	id2 := strings.TrimSpace(a.mustAnet("send", "--to", sb.AID, "second"))
	testkit.WaitFor(t, "second task", func() bool { return len(b.inbox()) == 2 })
	if l := b.show(id2); len(l) != 1 || !l[0].Trusted {
		t.Fatalf("B's show of a trusted peer's task = %+v, want trusted", l)
	}
	b.mustAnet("trust", "remove", sa.AID)
	a.mustAnet("peer", "remove", sb.AID)
	if out := a.mustAnet("peer", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("peer list after remove = %q, want []", out)
	}
}

// Clear errors that name the field: bad aid, unknown peer, unknown interaction, bad
// address, oversized text.
func TestPeerCLIErrors(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	other := n.identity() // any valid aid that is not a peer: the node's own key file
	stranger, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  []string
	}{
		{"bad aid", []string{"peer", "add", "annotanaid", "127.0.0.1:1"}, "", []string{"aid:", "invalid aid", "bad_request"}},
		{"bad address", []string{"peer", "add", stranger.AID(), "localhost"}, "", []string{"addr:", "HOST:PORT"}},
		{"own aid", []string{"peer", "add", other.AID(), "127.0.0.1:1"}, "", []string{"aid:", "this node itself"}},
		{"unknown peer", []string{"send", "--to", stranger.AID(), "hi"}, "", []string{"to: " + stranger.AID(), "no peer with that aid", "anet peer add", "reason: unknown_peer"}},
		{"bad to", []string{"send", "--to", "an", "hi"}, "", []string{"to:", "invalid aid"}},
		{"unknown interaction", []string{"show", "ix-nothing"}, "", []string{"interaction ix-nothing", "no interaction with that id", "reason: unknown_interaction"}},
		{"reply to unknown", []string{"reply", "ix-nothing", "x"}, "", []string{"interaction ix-nothing", "no interaction with that id", "reason: unknown_interaction"}},
		{"remove unknown peer", []string{"peer", "remove", stranger.AID()}, "", []string{"peer " + stranger.AID(), "no peer with that aid", "reason: unknown_peer"}},
		{"non-UTF-8 text", []string{"send", "--to", stranger.AID(), "caf\xe9"}, "", []string{"text: byte 3 (0xe9) is not valid UTF-8"}},
		{"non-UTF-8 reply", []string{"reply", "ix-nothing", "\xff"}, "", []string{"text: byte 0 (0xff) is not valid UTF-8"}},
		{"text over the limit from stdin", []string{"send", "--to", stranger.AID(), "-"}, strings.Repeat("x", 300<<10), []string{"text:", "262144"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(testharness.Bin(t, "anet"), tc.args...)
			cmd.Env = n.env
			cmd.Stdin = strings.NewReader(tc.stdin)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("anet %v succeeded: %s", tc.args, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("anet %v output %q does not contain %q", tc.args[:2], out, w)
				}
			}
		})
	}
	// anetd checks the limit itself, for clients other than the CLI.
	n.mustAnet("peer", "add", stranger.AID(), "127.0.0.1:1")
	err = n.client().Do(ctx(t), "POST", "/v1/send", control.SendRequest{To: stranger.AID(), Text: strings.Repeat("y", 300<<10)}, nil)
	var re *control.RemoteError
	if !errors.As(err, &re) || re.Code != reasons.MessageTooLarge || !strings.Contains(re.Message, "text: 307200 bytes, more than the limit of 262144") {
		t.Fatalf("POST /v1/send with 300 KiB = %v, want message_too_large naming the text limit", err)
	}
}

// A peer listener that cannot bind stops start-up with a message naming the address and
// the config key, rather than a node that looks healthy while peers are refused.
func TestPeerListenerBindFailureStopsStart(t *testing.T) {
	a := newNode(t, nodeOptions{})
	a.start()
	addr := a.status().ListenAddr
	b := newNode(t, nodeOptions{config: fmt.Sprintf("listen: %q\n", addr)})
	b.startProcess()
	select {
	case err := <-b.done:
		if err == nil {
			t.Fatal("anetd exited 0 with its listen address taken")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("anetd kept running with its listen address taken")
	}
	for _, w := range []string{"peer listener " + addr, "address already in use", "`listen`"} {
		if !strings.Contains(b.logs.String(), w) {
			t.Errorf("start-up error does not mention %q:\n%s", w, b.logs.String())
		}
	}
}
