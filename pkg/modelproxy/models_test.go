package modelproxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		up, _ := UpstreamFor("claude", "")
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
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadCatalog(write(t, c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadCatalog(%s) = %v, want error naming %q", c.name, err, c.want)
			}
		})
	}
	t.Run("missing override file", func(t *testing.T) {
		if _, err := LoadCatalog("/nonexistent/models.yaml"); err == nil {
			t.Fatal("LoadCatalog(missing) = nil, want error")
		}
	})
}
