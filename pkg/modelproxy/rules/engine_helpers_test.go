package rules

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

func mustEngine(t testing.TB, agent, apiBase, model string) *Engine {
	t.Helper()
	cat, err := LoadCatalog("")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	up, err := upstream.For(agent, apiBase)
	if err != nil {
		t.Fatalf("upstream.For(%q, %q): %v", agent, apiBase, err)
	}
	e, err := NewEngine(up, model, cat)
	if err != nil {
		t.Fatalf("NewEngine(%q): %v", model, err)
	}
	return e
}

// ruleCase is one row of a rule table: a request and either the refusal code or checks on
// the rewritten body and headers.
type ruleCase struct {
	name   string
	api    API
	header http.Header
	body   string
	want   reasons.Code // "" means forwarded
	detail string       // substring the refusal detail must contain
	check  func(t *testing.T, o map[string]any, h http.Header)
}

func runRules(t *testing.T, e *Engine, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.header
			if h == nil {
				h = http.Header{}
			}
			d := e.Apply(c.api, h, []byte(c.body))
			if c.want != "" {
				if d.Refusal == nil {
					t.Fatalf("Apply(%s) forwarded %s, want refusal %s", c.name, d.Body, c.want)
				}
				if d.Refusal.Code != c.want {
					t.Fatalf("Apply(%s) refusal = %s (%s), want %s", c.name, d.Refusal.Code, d.Refusal.Message(), c.want)
				}
				wantMsg := "anet: " + reasons.Text(c.want)
				if !strings.HasPrefix(d.Refusal.Message(), wantMsg) {
					t.Fatalf("Apply(%s) message = %q, want prefix %q", c.name, d.Refusal.Message(), wantMsg)
				}
				if !strings.Contains(d.Refusal.Detail, c.detail) {
					t.Fatalf("Apply(%s) detail = %q, want it to contain %q", c.name, d.Refusal.Detail, c.detail)
				}
				if d.Body != nil {
					t.Fatalf("Apply(%s) refused but returned a body", c.name)
				}
				return
			}
			if d.Refusal != nil {
				t.Fatalf("Apply(%s) = refusal %s, want forwarded", c.name, d.Refusal.Message())
			}
			o := decodeForTest(t, d.Body)
			if c.check != nil {
				c.check(t, o, d.Header)
			}
		})
	}
}

func decodeForTest(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var o map[string]any
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("rewritten body is not JSON: %v: %s", err, b)
	}
	return o
}

// at walks o by keys and indexes ("messages", 0, "content").
func at(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := o.(map[string]any)
			o = m[k]
		case int:
			a, _ := o.([]any)
			if k >= len(a) {
				return nil
			}
			o = a[k]
		}
	}
	return o
}

func wantField(t *testing.T, o map[string]any, want any, path ...any) {
	t.Helper()
	got := at(o, path...)
	if n, ok := got.(json.Number); ok {
		got = n.String()
	}
	if got != want {
		t.Fatalf("body%v = %v (%T), want %v", path, got, got, want)
	}
}

func wantAbsent(t *testing.T, o map[string]any, path ...any) {
	t.Helper()
	parent := at(o, path[:len(path)-1]...)
	m, _ := parent.(map[string]any)
	if _, ok := m[path[len(path)-1].(string)]; ok {
		t.Fatalf("body%v present = %v, want absent", path, m[path[len(path)-1].(string)])
	}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
