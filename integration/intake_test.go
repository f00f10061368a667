package integration

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/peer"
)

// N1 (and the peer side of P1, B3, B4, F1): a trusted peer's and a known peer's `anet send`
// reach the inbox of a node while it is under each attack: half-open TCP from one address
// and from 2000, 2000 idle TLS connections with fresh keys, 2000 fresh keys flooding tasks,
// and strangers filling their storage quotas. Every attack goes on until both tasks are in
// the inbox; a task that arrives only at the attack's bounded end fails the test. The
// latencies are logged here and compared with the quiet figure in `make bench`.
func TestIntakeUnderAttack(t *testing.T) {
	r := newIntakeRig(t, intakeAttackConfig)
	quietA, quietC := r.quiet()
	t.Logf("quiet: trusted %s, known %s", quietA.Round(time.Millisecond), quietC.Round(time.Millisecond))
	var floodStats *attackStats
	refusedSeen := 0 // what the attackers saw B end or refuse
	for _, att := range intakeAttacks() {
		t.Run(att.name, func(t *testing.T) {
			r.tb = t
			_, _, st := r.underAttack(att)
			if strings.Contains(att.name, "flooding") {
				floodStats = st
			}
			refusedSeen += st.refused()
		})
		if t.Failed() {
			return
		}
	}
	r.tb = t
	// What B saw: the attacks were turned away in layers, and said so in summary lines.
	logs := ""
	testkit.WaitFor(t, "B's summary of what it turned away", func() bool {
		logs = r.b.logs.String()
		return containsAll(logs, "source_handshakes=", "strangers_rate=", "evicted=", "peer_quota_exceeded=", "strangers_quota_exceeded=", "peer_rate_limited=")
	})
	// The log stays bounded: one summary line per interval and at most a few individual
	// refusal lines in each, however many connections and frames were refused.
	summaries := strings.Count(logs, "peer intake turned away")
	individual := len(regexp.MustCompile(`msg="peer (handshake failed|message refused|connection ended)`).FindAllString(logs, -1))
	turned := 0
	for _, m := range regexp.MustCompile(`(?:connections|messages)="([^"]*)"`).FindAllStringSubmatch(logs, -1) {
		for _, kv := range strings.Split(m[1], ",") {
			_, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			turned += n
		}
	}
	if individual > 20*(summaries+1) {
		t.Errorf("%d individual refusal lines for %d summary intervals: the log is not bounded", individual, summaries)
	}
	if turned < refusedSeen*8/10 {
		t.Errorf("B's summaries count %d connections and messages turned away; the attackers saw %d", turned, refusedSeen)
	}
	t.Logf("B turned away %d connections and messages in %d summary lines and %d individual lines", turned, summaries, individual)
	// Fresh keys were refused for the strangers' budget, never admitted past it, and the
	// evidence chain holds every task B accepted.
	if floodStats != nil && floodStats.count(string(peer.CodeRateLimited)+"(node-wide)") == 0 {
		t.Errorf("the flood never met the strangers' node-wide budget: %s", floodStats)
	}
	r.b.mustAnet("evidence", "verify")
}

// quiet measures one task from A and one from C with nothing else going on.
func (r *intakeRig) quiet() (trusted, known time.Duration) {
	r.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), attackBound)
	defer cancel()
	var err error
	if trusted, err = r.deliver(r.a, "trusted, quiet", ctx.Done()); err != nil {
		r.tb.Fatal(err)
	}
	if known, err = r.deliver(r.c, "known, quiet", ctx.Done()); err != nil {
		r.tb.Fatal(err)
	}
	return trusted, known
}
