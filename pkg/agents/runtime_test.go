package agents

import "testing"

// TestParseVersion reads the version line of the interpreters the agents name (E10).
func TestParseVersion(t *testing.T) {
	cases := []struct {
		out  string
		want Version
		ok   bool
	}{
		{"v24.21.0\n", Version{24, 21, 0}, true},
		{"v20.20.2", Version{20, 20, 2}, true},
		{"Python 3.11.2\n", Version{3, 11, 2}, true},
		{"26.1", Version{26, 1, 0}, true},
		{"node: 99999999999999999999.1.0", Version{}, false},
		{"no version here", Version{}, false},
		{"", Version{}, false},
	}
	for _, c := range cases {
		t.Run(c.out, func(t *testing.T) {
			got, err := ParseVersion(c.out)
			if (err == nil) != c.ok || got != c.want {
				t.Fatalf("ParseVersion(%q) = %v, %v; want %v, ok %v", c.out, got, err, c.want, c.ok)
			}
		})
	}
}

// TestRuntimeRequirements: each agent's interpreter and the versions it accepts, as its
// package says (E10); openclaw's two ranges at their edges.
func TestRuntimeRequirements(t *testing.T) {
	oc, _ := Lookup("openclaw")
	cx, _ := Lookup("codex")
	cases := []struct {
		name string
		rt   Runtime
		v    Version
		want bool
	}{
		{"openclaw on Debian 12's node 20", oc.Runtime, Version{20, 20, 2}, false},
		{"openclaw just below 24.16", oc.Runtime, Version{24, 15, 9}, false},
		{"openclaw at 24.16.0", oc.Runtime, Version{24, 16, 0}, true},
		{"openclaw on the pinned 24.21.0", oc.Runtime, Version{24, 21, 0}, true},
		{"openclaw on 25", oc.Runtime, Version{25, 0, 0}, false},
		{"openclaw on 26.0", oc.Runtime, Version{26, 0, 9}, false},
		{"openclaw at 26.1", oc.Runtime, Version{26, 1, 0}, true},
		{"codex on node 20", cx.Runtime, Version{20, 20, 2}, true},
		{"codex on node 14", cx.Runtime, Version{14, 21, 3}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rt.Accepts(c.v); got != c.want {
				t.Fatalf("%s.Accepts(%v) = %v, want %v", c.rt.Text, c.v, got, c.want)
			}
		})
	}
	for _, a := range []Agent{Claude, Opencode, Cursor} {
		if s, _ := Lookup(string(a)); s.Runtime.Program != "" {
			t.Errorf("%s runtime = %q, want none (a native binary)", a, s.Runtime.Program)
		}
	}
	for _, a := range []Agent{Codex, Openclaw} {
		if s, _ := Lookup(string(a)); s.Runtime.Program != "node" || s.Runtime.Text == "" {
			t.Errorf("%s runtime = %+v, want node with its requirement in words", a, s.Runtime)
		}
	}
}

// FuzzParseVersion: whatever an interpreter prints, a version ParseVersion returns prints
// back as a string that parses to the same version (so a refusal names what was checked).
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"v24.21.0\n", "v20.20.2", "Python 3.11.2\n", "26.1", "no version here", "", "node: 99999999999999999999.1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		v, err := ParseVersion(out)
		if err != nil {
			return
		}
		for _, n := range v {
			if n < 0 {
				t.Fatalf("ParseVersion(%q) = %v: a negative component", out, v)
			}
		}
		back, err := ParseVersion(v.String())
		if err != nil || back != v {
			t.Fatalf("ParseVersion(%q) = %v, but ParseVersion(%q) = %v, %v", out, v, v.String(), back, err)
		}
	})
}
