package metrics

import "sync"

// Label values that stand for what cannot be a label of its own.
const (
	// OtherValue stands for a value of the wrong shape, or one past maxValuesPerLabel.
	OtherValue = "other"
	// Unauthenticated is the class of a connection turned away before its handshake ended:
	// no key, so no class yet.
	Unauthenticated = "unauthenticated"
)

// maxValuesPerLabel bounds the distinct values one label takes. Codes and kinds come from
// the node's own catalogs, but some arrive in bytes another process wrote (a run's usage
// report from anet-egress): a flood of new names must cost a bounded number of series, not
// the daemon's memory.
const maxValuesPerLabel = 256

// maxValueLen is the longest label value kept; reason codes and entry kinds are far shorter.
const maxValueLen = 64

// labelValues admits label values: the shape of a code ([a-z0-9_], at most maxValueLen
// bytes) and at most maxValuesPerLabel distinct ones per label name. mu guards seen.
type labelValues struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
}

func newLabelValues() *labelValues { return &labelValues{seen: map[string]map[string]bool{}} }

// of returns v when it may be a value of label name, else OtherValue.
func (l *labelValues) of(name, v string) string {
	if !codeShaped(v) {
		return OtherValue
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen[name]
	if s == nil {
		s = map[string]bool{}
		l.seen[name] = s
	}
	if s[v] {
		return v
	}
	if len(s) >= maxValuesPerLabel {
		return OtherValue
	}
	s[v] = true
	return v
}

// codeShaped reports whether v looks like a reason code, an entry kind, a route or a class.
func codeShaped(v string) bool {
	if v == "" || len(v) > maxValueLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
