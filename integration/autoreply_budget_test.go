package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// B2, B4, B5: with runs_per_peer_per_day 2 the third task from one peer is refused with
// budget and the end of B's day; with runs_per_day 3 the fourth over all peers is too; a
// restart of B keeps the counts.
func TestAutoReplyBudget(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec + "  sandbox:\n    runs_per_day: 3\n    runs_per_peer_per_day: 2\n"})
	a, c := newNode(t, nodeOptions{}), newNode(t, nodeOptions{})
	b.arStart()
	a.start()
	c.start()
	aidB := connect(t, a, b)
	connect(t, c, b)

	// One at a time, so the order of counting is the order of sending.
	for i := 1; i <= 2; i++ {
		id := send(t, a, aidB, fmt.Sprintf("task %d", i))
		if ans := answerAt(t, a, id); ans.Type != "reply" {
			t.Fatalf("A's task %d: answer %+v, want a reply", i, ans)
		}
	}
	id := send(t, a, aidB, "task 3")
	ans := answerAt(t, a, id)
	dayEnd := b.status().Budget.DayEnds
	if ans.Type != "refusal" || ans.Code != "budget" || !ans.Until.Equal(dayEnd) || ans.Until.IsZero() {
		t.Fatalf("A's third task: answer %+v, want refusal budget until %v (B4)", ans, dayEnd)
	}
	if y, m, d := dayEnd.Local().Date(); dayEnd.Local().Hour() != 0 || !time.Date(y, m, d, 0, 0, 0, 0, time.Local).Equal(dayEnd) {
		t.Fatalf("day end %v is not a local midnight", dayEnd)
	}
	// C's first task is the third run of the day; its second is over runs_per_day.
	if ans := answerAt(t, c, send(t, c, aidB, "c task 1")); ans.Type != "reply" {
		t.Fatalf("C's first task: %+v, want a reply", ans)
	}
	if ans := answerAt(t, c, send(t, c, aidB, "c task 2")); ans.Type != "refusal" || ans.Code != "budget" || ans.Until.IsZero() {
		t.Fatalf("C's second task: %+v, want refusal budget (runs_per_day 3)", ans)
	}
	if n := len(f.up.Requests()); n != 3 {
		t.Fatalf("upstream requests = %d, want 3: a refused turn must start no agent (B4)", n)
	}
	st := b.status()
	if st.Budget.RunsToday != 3 || st.Budget.Left != 0 || st.Budget.RunsPerDay != 3 || st.Budget.RunsPerPeerPerDay != 2 {
		t.Fatalf("B's budget = %+v, want 3 of 3 used", st.Budget)
	}
	// B5: counts are rebuilt from the chain at start-up.
	b.stop()
	b.arStart()
	if st := b.status(); st.Budget.RunsToday != 3 || st.Budget.Left != 0 {
		t.Fatalf("B's budget after restart = %+v, want 3 of 3 still used", st.Budget)
	}
	if ans := answerAt(t, a, send(t, a, aidB, "after restart")); ans.Code != "budget" {
		t.Fatalf("A's task after restart: %+v, want budget", ans)
	}
}

// B3: runs_per_day 0: an untrusted task stays in the inbox and the requester gets nothing.
func TestAutoReplyZeroBudgetKeepsTaskInInbox(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec + "  sandbox:\n    runs_per_day: 0\n"})
	a, _, aidB := startPair(t, b)
	id := send(t, a, aidB, "anything")
	// The engine has decided once it logs the hold; only then is "nothing happened" a fact.
	testkit.WaitFor(t, "B's engine holds the task", func() bool { return strings.Contains(b.logs.String(), "run budget is 0") })
	if l := b.inbox(); len(l) != 1 || l[0].Interaction != id || l[0].State != "new" {
		t.Fatalf("B's inbox = %+v, want the task still new", l)
	}
	if l := a.show(id); len(l) != 1 || l[0].Answer != nil {
		t.Fatalf("A's view = %+v, want no answer", l)
	}
	if len(evidence(t, b, "turn_started")) != 0 || len(f.up.Requests()) != 0 {
		t.Fatal("a turn started although the budget is 0")
	}
	st := b.status()
	found := false
	for _, r := range st.AutoReply.Reasons {
		found = found || r.Code == "budget_zero"
	}
	if !found {
		t.Fatalf("B's status reasons = %+v, want budget_zero", st.AutoReply.Reasons)
	}
}
