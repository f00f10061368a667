package integration

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
)

// maxOverlap replays the chain's turn_started / turn_completed entries in sequence order and
// returns the most turns in progress at once, in all and per peer.
func maxOverlap(t *testing.T, n *testNode) (all int, perPeer int) {
	t.Helper()
	entries := append(evidence(t, n, "turn_started"), evidence(t, n, "turn_completed")...)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Seq < entries[j].Seq })
	cur, peers := 0, map[string]int{}
	for _, e := range entries {
		d := 1
		if e.Kind == "turn_completed" {
			d = -1
		}
		cur += d
		peers[e.Peer] += d
		all = max(all, cur)
		perPeer = max(perPeer, peers[e.Peer])
	}
	return all, perPeer
}

// B6: three untrusted peers at once: at most two run together, the third waits and runs
// later without a refusal; two tasks of one peer never run at once.
func TestAutoReplySlots(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	b.arStart()
	aidB := ""
	var reqs []*testNode
	for i := 0; i < 3; i++ {
		n := newNode(t, nodeOptions{})
		n.start()
		aidB = connect(t, n, b)
		reqs = append(reqs, n)
	}
	type sent struct {
		n  *testNode
		id string
	}
	var all []sent
	// SLOW keeps each run a few seconds, so all of them are waiting for a slot together.
	for _, n := range reqs {
		all = append(all, sent{n, send(t, n, aidB, "SLOW task")})
	}
	all = append(all, sent{reqs[0], send(t, reqs[0], aidB, "SLOW second task of the first peer")})
	sawTwo := false
	for _, s := range all {
		testkit.WaitFor(t, "answer to "+s.id, func() bool {
			if st := b.status(); st.AutoReply.RunsActive > 2 {
				t.Fatalf("B's status shows %d runs active, want at most 2 (B6)", st.AutoReply.RunsActive)
			} else if st.AutoReply.RunsActive == 2 {
				sawTwo = true
			}
			l := s.n.show(s.id)
			return len(l) == 1 && l[0].Answer != nil
		})
		if ans := s.n.show(s.id)[0].Answer; ans.Type != "reply" {
			t.Fatalf("answer to %s = %+v, want a reply: a task without a slot waits, it is not refused", s.id, ans)
		}
	}
	most, perPeer := maxOverlap(t, b)
	if most != 2 || perPeer != 1 {
		t.Fatalf("runs at once = %d (per peer %d), want 2 and 1 (B6)", most, perPeer)
	}
	if !sawTwo {
		t.Log("status never caught two runs at once; the chain shows it")
	}
	var st control.Status = b.status()
	if st.Budget.RunsToday != 4 || st.AutoReply.RunsActive != 0 {
		t.Fatalf("B's status = %+v / %+v, want 4 runs, none active", st.Budget, st.AutoReply)
	}
}

// F1, P2: with bwrap unavailable to anet-sandboxd a sandboxed turn starts nothing and the
// requester gets sandbox_unavailable; the operator sees no_bwrap. O1: on a platform with no
// sandbox backend (an anet-sandboxd built with none) the node starts, the same turn is refused
// the same way, and the operator sees platform_unsupported.
func TestAutoReplyFailsClosedWithoutSandbox(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    arOptions
		code string
	}{
		{"no bwrap", arOptions{autoReply: sandboxExec, noBwrap: true}, "no_bwrap"},
		{"no backend", arOptions{autoReply: sandboxExec, sandboxd: "anet-sandboxd-nobackend"}, "platform_unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newARFake(t, t.TempDir(), arPinned)
			b := newARNode(t, f, tc.o)
			a, aidA, aidB := startPair(t, b)
			id := send(t, a, aidB, "run something")
			ans := answerAt(t, a, id)
			if ans.Type != "refusal" || ans.Code != "sandbox_unavailable" || !ans.Until.IsZero() {
				t.Fatalf("A's answer = %+v, want refusal sandbox_unavailable (F1)", ans)
			}
			// Nothing started: no marker, no run dir, no model request, no turn_started.
			if _, err := os.Stat(filepath.Join(b.path("cache", "anet", "work-sandbox", aidA, id), "started")); err == nil {
				t.Fatal("the agent ran although the sandbox is unavailable")
			}
			if len(f.up.Requests()) != 0 || len(evidence(t, b, "turn_started")) != 0 {
				t.Fatal("a model request or a turn start was recorded although nothing may start")
			}
			st := b.status()
			if st.AutoReply.Sandbox.OK || st.AutoReply.Sandbox.Code != tc.code || !hasWarning(st, tc.code) {
				t.Fatalf("B's status sandbox = %+v, warnings %+v, want %s", st.AutoReply.Sandbox, st.Warnings, tc.code)
			}
			if r := evidence(t, b, "turn_refused"); len(r) != 1 || details(t, r[0])["reason"] != tc.code {
				t.Fatalf("B's turn_refused entries = %+v, want one with reason %s", r, tc.code)
			}
			// S8: the self-test says which stage failed and why.
			out, _, err := b.anet("autoreply", "test")
			if err == nil || !containsAll(out, "FAIL probe", tc.code, "result: failed (1 of") {
				t.Fatalf("anet autoreply test = %q, %v, want a failed probe with %s", out, err, tc.code)
			}
		})
	}
}

// E10, F1, F2: cursor in the sandbox: nothing starts, the requester gets
// sandbox_unavailable and the operator sees agent_unsupported.
func TestAutoReplyCursorInSandbox(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: "  backend: exec\n  agent: cursor\n  untrusted: sandbox\n"})
	a, _, aidB := startPair(t, b)
	ans := answerAt(t, a, send(t, a, aidB, "hello"))
	if ans.Type != "refusal" || ans.Code != "sandbox_unavailable" {
		t.Fatalf("A's answer = %+v, want sandbox_unavailable", ans)
	}
	st := b.status()
	found := false
	for _, r := range st.AutoReply.Reasons {
		found = found || r.Code == "agent_unsupported"
	}
	if !found || len(evidence(t, b, "turn_started")) != 0 || len(f.up.Requests()) != 0 {
		t.Fatalf("B's status reasons = %+v, want agent_unsupported and nothing started", st.AutoReply.Reasons)
	}
	if out := b.mustAnet("status"); !containsAll(out, "agent_unsupported") {
		t.Fatalf("anet status = %q, want agent_unsupported", out)
	}
}

func hasWarning(st control.Status, code string) bool {
	for _, w := range st.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
