package modelproxy

import (
	"net/http"
	"testing"

	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
)

// mustEngine is the rule engine a run of agent gets, as the endpoint builds it.
func mustEngine(t testing.TB, agent, apiBase, model string) *rules.Engine {
	t.Helper()
	cat, err := rules.LoadCatalog("")
	if err != nil {
		t.Fatalf("LoadCatalog: %v", err)
	}
	up, err := upstream.For(agent, apiBase)
	if err != nil {
		t.Fatalf("upstream.For(%q, %q): %v", agent, apiBase, err)
	}
	e, err := rules.NewEngine(up, model, cat)
	if err != nil {
		t.Fatalf("NewEngine(%q): %v", model, err)
	}
	return e
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}
