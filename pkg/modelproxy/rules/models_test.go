package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// E2: models live in a data file with an operator override merged on top.
func TestCatalogOverrideE2(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "models.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("adds a model, moves an alias and cheapest", func(t *testing.T) {
		p := write(t, "providers:\n  anthropic:\n    cheapest: claude-mini-6\n    aliases: {sonnet: claude-mini-6}\n    models:\n      claude-mini-6: {max_output_tokens: 4096, constraints: {sampling: false}}\n")
		c, err := LoadCatalog(p)
		if err != nil {
			t.Fatalf("LoadCatalog: %v", err)
		}
		for in, want := range map[string]string{"": "claude-mini-6", "sonnet": "claude-mini-6", "opus": "claude-opus-5-5"} {
			if got, err := c.Resolve("anthropic", in); err != nil || got.ID != want {
				t.Errorf("Resolve(%q) = %q, %v, want %q", in, got.ID, err, want)
			}
		}
		up, _ := upstream.For("claude", "")
		e, err := NewEngine(up, "", c)
		if err != nil {
			t.Fatal(err)
		}
		d := e.Apply(AnthropicMessages, hdr(), []byte(`{"max_tokens":8000,"temperature":0.5}`))
		o := decodeForTest(t, d.Body)
		wantField(t, o, "4096", "max_tokens")
		wantAbsent(t, o, "temperature")
	})
	for _, c := range []struct{ name, yaml, want string }{
		{"unknown field", "providers:\n  anthropic:\n    cheepest: x\n", "cheepest"},
		{"alias to nothing", "providers:\n  anthropic:\n    aliases: {sonnet: nope}\n", "aliases.sonnet"},
		{"cheapest unknown", "providers:\n  openai:\n    cheapest: nope\n", "providers.openai.cheapest"},
		{"negative cap", "providers:\n  openai:\n    models: {x: {max_output_tokens: -1}}\n", "max_output_tokens"},
		{"float-looking price", "providers:\n  openai:\n    models: {x: {input_price: 1e-3, output_price: 1}}\n", "providers.openai.models.x.input_price"},
		{"price too fine", "providers:\n  openai:\n    models: {x: {input_price: 0.0000001, output_price: 1}}\n", "providers.openai.models.x.input_price"},
		{"negative price", "providers:\n  openai:\n    models: {x: {input_price: 1, output_price: -2}}\n", "providers.openai.models.x.output_price"},
		{"input without output", "providers:\n  openai:\n    models: {x: {input_price: 1}}\n", "providers.openai.models.x.output_price"},
		{"cache price alone", "providers:\n  openai:\n    models: {x: {cache_read_price: 1}}\n", "providers.openai.models.x.input_price"},
		{"price as a list", "providers:\n  openai:\n    models: {x: {input_price: [1], output_price: 1}}\n", "price must be a decimal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, c.yaml)
			_, err := LoadCatalog(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadCatalog(%s) = %v, want error naming %q", c.name, err, c.want)
			}
			wantModelsFileInvalid(t, err, p)
		})
	}
	t.Run("missing override file", func(t *testing.T) {
		_, err := LoadCatalog("/nonexistent/models.yaml")
		if err == nil {
			t.Fatal("LoadCatalog(missing) = nil, want error")
		}
		wantModelsFileInvalid(t, err, "/nonexistent/models.yaml")
	})
	t.Run("not YAML", func(t *testing.T) {
		p := write(t, "providers: [\n")
		_, err := LoadCatalog(p)
		wantModelsFileInvalid(t, err, p)
	})
	t.Run("prices read exactly, cache prices default to input", func(t *testing.T) {
		p := write(t, "providers:\n  custom:\n    models:\n      local-1: {input_price: \"0.3\", output_price: 1.000001}\n")
		c, err := LoadCatalog(p)
		if err != nil {
			t.Fatalf("LoadCatalog: %v", err)
		}
		up, _ := upstream.For("hermes", "https://llm.example/v1")
		e, err := NewEngine(up, "local-1", c)
		if err != nil {
			t.Fatal(err)
		}
		want := money.Prices{Input: 300_000, Output: 1_000_001, CacheWrite: 300_000, CacheRead: 300_000}
		if got := e.Prices(); got == nil || *got != want {
			t.Fatalf("custom model prices = %+v, want %+v (K1)", got, want)
		}
	})
}

// K1: every built-in model is priced, with the cache classes where the list has them.
func TestBuiltinPricesK1(t *testing.T) {
	c, err := LoadCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	for pn, p := range c.Providers {
		for id, m := range p.Models {
			if m.Prices == nil || m.Prices.Input <= 0 || m.Prices.Output <= 0 {
				t.Errorf("%s/%s has no prices: %+v", pn, id, m.Prices)
			}
		}
	}
	h := c.Providers["anthropic"].Models["claude-haiku-5-5"].Prices
	if want := (money.Prices{Input: 100_000, Output: 500_000, CacheWrite: 125_000, CacheRead: 10_000}); h == nil || *h != want {
		t.Fatalf("claude-haiku-5-5 prices = %+v, want %+v", h, want)
	}
}

// C4: every refusal of the models file carries models_file_invalid and names the file, so
// anetd --check, anet doctor and anet-egress say the same thing, not "internal".
func wantModelsFileInvalid(t *testing.T, err error, path string) {
	t.Helper()
	if got := reasons.CodeOf(err); got != ModelsFileInvalid {
		t.Errorf("CodeOf(%v) = %q, want %q", err, got, ModelsFileInvalid)
	}
	if msg := reasons.Message(err); !strings.Contains(msg, path) {
		t.Errorf("Message(%v) = %q, want it to name %s", err, msg, path)
	}
}
