package modelproxy

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/secret"
)

// R1, F2: limits can be lowered, never raised; a proxy without a key or a real placeholder is
// not built.
func TestNewRefusesBadOptionsR1(t *testing.T) {
	e := mustEngine(t, "claude", "", "")
	up, _ := upstream.For("claude", "")
	ph := strings.Repeat("a", 64)
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"61 requests", Options{Placeholder: ph, Key: secret.New("k"), Limits: Limits{Requests: 61}}, "limits.requests"},
		{"body above 8 MiB", Options{Placeholder: ph, Key: secret.New("k"), Limits: Limits{BodyBytes: 8<<20 + 1}}, "limits.body_bytes"},
		{"total above 16 MiB", Options{Placeholder: ph, Key: secret.New("k"), Limits: Limits{TotalBytes: 16<<20 + 1}}, "limits.total_bytes"},
		{"negative", Options{Placeholder: ph, Key: secret.New("k"), Limits: Limits{Requests: -1}}, "limits.requests"},
		{"no key", Options{Placeholder: ph}, "no_api_key"},
		{"short placeholder", Options{Placeholder: "abc", Key: secret.New("k")}, "placeholder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(e, up, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New(%s) = %v, want error naming %q", c.name, err, c.want)
			}
		})
	}
	p, err := New(e, up, Options{Placeholder: ph, Key: secret.New("k"), Limits: Limits{Requests: 60, BodyBytes: 1}})
	if err != nil || p.Limits() != (Limits{Requests: 60, BodyBytes: 1, TotalBytes: 16 << 20}) {
		t.Fatalf("New(lowered) = %+v, %v, want requests 60, body 1, total 16 MiB", p.Limits(), err)
	}
}
