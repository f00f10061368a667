package agents

import (
	"strings"
	"testing"
)

// TestLookup: the table covers the six agents of E10 with their binaries; only cursor lacks
// sandbox support.
func TestLookup(t *testing.T) {
	cases := []struct {
		name    string
		ok      bool
		binary  string
		sandbox bool
	}{
		{"claude", true, "claude", true},
		{"codex", true, "codex", true},
		{"opencode", true, "opencode", true},
		{"hermes", true, "hermes", true},
		{"openclaw", true, "openclaw", true},
		{"cursor", true, "cursor-agent", false},
		{"Claude", false, "", false},
		{"aider", false, "", false},
		{"", false, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok := Lookup(c.name)
			if ok != c.ok || s.Binary != c.binary || s.Sandbox != c.sandbox {
				t.Fatalf("Lookup(%q) = %+v, %v; want binary %q sandbox %v, %v", c.name, s, ok, c.binary, c.sandbox, c.ok)
			}
			if ok && (s.Install == "" || s.Checked == "" || string(s.Agent) != c.name) {
				t.Errorf("Lookup(%q) = %+v: want agent, install hint and what it was checked against", c.name, s)
			}
		})
	}
	if n := len(table); n != 6 {
		t.Errorf("len(table) = %d, want 6", n)
	}
}

// TestParamsValidation: bad input gets an error naming the field (STYLE), and no error ever
// contains the placeholder (secrets stay out of errors and logs).
func TestParamsValidation(t *testing.T) {
	secretish := "SeCrEt" + strings.Repeat("x", 40) // a valid-length placeholder to look for
	cases := []struct {
		name   string
		mutate func(p *Params)
		want   string
	}{
		{"empty task", func(p *Params) { p.Task = "" }, "task: empty"},
		{"task with NUL", func(p *Params) { p.Task = "a\x00b" }, "task: contains NUL"},
		{"task too long", func(p *Params) { p.Task = strings.Repeat("a", MaxTaskBytes+1) }, "task: 122881 bytes"},
		{"empty model", func(p *Params) { p.Model = "" }, "model: empty"},
		{"model with quote", func(p *Params) { p.Model = `gpt"\n[x]` }, `character '"' not allowed`},
		{"model with space", func(p *Params) { p.Model = "gpt 6" }, `character ' ' not allowed`},
		{"model with newline", func(p *Params) { p.Model = "a\nb" }, `character '\n' not allowed`},
		{"model too long", func(p *Params) { p.Model = strings.Repeat("m", 201) }, "model: 201 bytes"},
		{"port zero", func(p *Params) { p.Port = 0 }, "port 0: want 1-65535"},
		{"port too big", func(p *Params) { p.Port = 70000 }, "port 70000"},
		{"placeholder short", func(p *Params) { p.Placeholder = "abc" }, "placeholder: 3 characters"},
		{"placeholder bad char", func(p *Params) { p.Placeholder = secretish + "\n" }, "placeholder: character at offset 46"},
		{"placeholder with quote", func(p *Params) { p.Placeholder = `"` + secretish }, "placeholder: character at offset 0"},
		{"home relative", func(p *Params) { p.Home = "home/agent" }, `home "home/agent": want a clean absolute path`},
		{"home unclean", func(p *Params) { p.Home = "/home/../etc" }, "want a clean absolute path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := params(Claude, true)
			p.Placeholder = secretish
			c.mutate(&p)
			l, err := For(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("For(%s) = %v, %v; want an error containing %q", c.name, l.Argv, err, c.want)
			}
			if strings.Contains(err.Error(), "SeCrEt") {
				t.Errorf("For error leaks the placeholder: %v", err)
			}
		})
	}
	t.Run("edge values accepted", func(t *testing.T) {
		p := params(Openclaw, true)
		p.Task = strings.Repeat("a", MaxTaskBytes)
		p.Port = 65535
		p.Model = "anthropic/claude-sonnet-4.6[1m]"
		p.Placeholder = strings.Repeat("a", 32)
		if _, err := For(p); err != nil {
			t.Fatalf("For(edge values) = %v, want nil", err)
		}
		p.Port = 1
		p.Placeholder = strings.Repeat("Z", 256)
		if _, err := For(p); err != nil {
			t.Fatalf("For(port 1, 256-char placeholder) = %v, want nil", err)
		}
	})
	t.Run("direct mode still checks the task", func(t *testing.T) {
		if _, err := For(Params{Agent: Cursor, Task: ""}); err == nil || !strings.Contains(err.Error(), "task: empty") {
			t.Fatalf("For(cursor direct, empty task) = %v, want task: empty", err)
		}
	})
}

// TestEnvList is the sorted NAME=value form sandbox.Spec.Env takes.
func TestEnvList(t *testing.T) {
	l := Launch{Env: map[string]string{"B": "2", "A": "x=y", "C": ""}}
	got := strings.Join(l.EnvList(), ",")
	if want := "A=x=y,B=2,C="; got != want {
		t.Fatalf("EnvList() = %q, want %q", got, want)
	}
}
