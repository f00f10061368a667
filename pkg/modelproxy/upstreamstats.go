package modelproxy

import (
	"strconv"
	"sync"

	"anet.dev/anet/pkg/reasons"
)

// UpstreamStats is what the model service answered to the run's forwarded requests: the
// HTTP statuses, and the requests that got no answer at all with the last such error. It is
// how `anet autoreply test` and the run's log name the cause of a failed model call
// ("11 of 11 upstream requests failed: lookup api.anthropic.com: ...").
type UpstreamStats struct {
	// Statuses counts the upstream's answers by HTTP status ("200", "529").
	Statuses map[string]int64 `json:"statuses,omitempty"`
	// Failed counts requests that reached no answer (DNS, connect, TLS, timeout).
	Failed int64 `json:"failed,omitempty"`
	// LastError is the last such failure; it names the host, never the key.
	LastError string `json:"last_error,omitempty"`
	// KeyEchoes counts answers that held the operator's key, which the node redacted (E1).
	KeyEchoes int64 `json:"key_echoes,omitempty"`
}

type upstreamStats struct {
	mu sync.Mutex
	// statuses are counted by number, so that an answer costs no string; snapshot names them.
	statuses  map[int]int64
	failures  int64
	lastError string
}

func (u *upstreamStats) answered(status int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.statuses == nil {
		u.statuses = map[int]int64{}
	}
	u.statuses[status]++
}

// failed records a request that got no answer; msg is the error's text, already redacted.
func (u *upstreamStats) failed(msg string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures++
	u.lastError = reasons.Clip(msg, 300)
}

func (u *upstreamStats) snapshot() UpstreamStats {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := UpstreamStats{Failed: u.failures, LastError: u.lastError}
	if len(u.statuses) > 0 {
		out.Statuses = make(map[string]int64, len(u.statuses))
		for k, v := range u.statuses {
			out.Statuses[strconv.Itoa(k)] = v
		}
	}
	return out
}
