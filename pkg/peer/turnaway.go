package peer

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/reasons"
)

// Log budget of the listener (N1): an attacker must not be able to turn each of its
// connections or frames into a log line.
const (
	// summaryEvery is the interval of the summary line of what was turned away.
	summaryEvery = 10 * time.Second
	// detailLines is how many individual refusal lines one interval may carry; the rest
	// are only counted.
	detailLines = 20
	// maxSummarySources bounds the per-source counts kept for an interval.
	maxSummarySources = 1024
)

// turnAways counts connections and messages turned away, tells the observer of each, and
// logs one summary line per interval. mu guards the fields below it.
type turnAways struct {
	log *slog.Logger
	obs Observer

	mu      sync.Mutex
	conns   map[string]int
	msgs    map[string]int
	sources map[admission.Source]int
	lines   int
	since   time.Time
}

func newTurnAways(log *slog.Logger, obs Observer, now time.Time) *turnAways {
	return &turnAways{log: log, obs: obs, conns: map[string]int{}, msgs: map[string]int{}, sources: map[admission.Source]int{}, since: now}
}

// conn counts a connection turned away or closed early, for reason, from src; class is the
// key's, or Unauthenticated before the handshake ended.
func (t *turnAways) conn(r admission.Reason, src admission.Source, class string) {
	t.obs.IntakeTurnedAway(class, string(r))
	t.add(t.conns, string(r), src)
}

// msg counts a message refused with code from src, sent by a key of class.
func (t *turnAways) msg(code reasons.Code, src admission.Source, class admission.Class) {
	t.obs.IntakeTurnedAway(class.String(), string(code))
	t.add(t.msgs, string(code), src)
}

func (t *turnAways) add(m map[string]int, key string, src admission.Source) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m[key]++
	if _, ok := t.sources[src]; ok || len(t.sources) < maxSummarySources {
		t.sources[src]++
	}
}

// detail reports whether one more individual line may be logged in this interval.
func (t *turnAways) detail() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines >= detailLines {
		return false
	}
	t.lines++
	return true
}

// flush logs the interval's summary, if anything was turned away, and starts a new one.
func (t *turnAways) flush(now time.Time) {
	t.mu.Lock()
	conns, msgs, sources, since := t.conns, t.msgs, t.sources, t.since
	t.conns, t.msgs, t.sources, t.lines, t.since = map[string]int{}, map[string]int{}, map[admission.Source]int{}, 0, now
	t.mu.Unlock()
	if len(conns) == 0 && len(msgs) == 0 {
		return
	}
	type kv struct {
		k string
		n int
	}
	var top []kv
	for s, n := range sources {
		top = append(top, kv{s.String(), n})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n || (top[i].n == top[j].n && top[i].k < top[j].k) })
	var tops []string
	for i := 0; i < len(top) && i < 5; i++ {
		tops = append(tops, fmt.Sprintf("%s=%d", top[i].k, top[i].n))
	}
	t.log.Warn("peer intake turned away", "seconds", int(now.Sub(since).Round(time.Second)/time.Second),
		"connections", counts(conns), "messages", counts(msgs), "sources", len(sources), "top_sources", strings.Join(tops, ","))
}

// counts renders a count map as "a=1,b=2", sorted, for one log attribute.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}
