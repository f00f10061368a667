package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/config"
)

// H1–H3: adding allowed hosts needs a terminal and a yes; removing needs neither; every entry
// is checked first and a refusal names the entry and the rule.
func TestConfirmEgress(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("auto_reply:\n  egress_allow: [pypi.org]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		value    string
		terminal bool
		yes      bool
		input    string
		want     string // "" = allowed
	}{
		{"remove one without terminal", "", false, false, "", ""},
		{"keep the same without terminal", "pypi.org", false, false, "", ""},
		{"add without terminal", "pypi.org,files.pythonhosted.org", false, false, "", "needs confirmation at a terminal"},
		{"add at terminal, yes typed", "files.pythonhosted.org", true, false, "yes\n", ""},
		{"add at terminal, no typed", "files.pythonhosted.org", true, false, "no\n", "not confirmed"},
		{"add at terminal with --yes", "files.pythonhosted.org", true, true, "", ""},
		{"H2 wildcard named", "*.example.com", true, true, "", `"*.example.com"`},
		{"H2 ip named", "10.0.0.1", true, true, "", "H2"},
		{"H3 model host named", "api.anthropic.com", true, true, "", "H3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			current, lerr := config.Load(cfg)
			if lerr != nil {
				t.Fatal(lerr)
			}
			err := confirmEgress(current, c.value, strings.NewReader(c.input), &out, c.terminal, c.yes)
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("confirmEgress(%q) = %v, want %q", c.value, err, c.want)
			}
			if c.terminal && !c.yes && c.input != "" && !strings.Contains(out.String(), "files.pythonhosted.org") {
				t.Fatalf("the question %q does not name the host being added", out.String())
			}
		})
	}
}
