package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	// The configuration codes an operator sees are registered by pkg/config.
	_ "anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

// pages maps each program to its man page.
var pages = []struct{ program, page string }{
	{"anet", "anet.1"},
	{"anetd", "anetd.8"},
	{"anet-sandboxd", "anet-sandboxd.8"},
	{"anet-egress", "anet-egress.8"},
}

// groffCheck renders a page with every warning on and returns what groff said.
func groffCheck(t *testing.T, path string) string {
	t.Helper()
	groff := requireTool(t, "groff", "groff-base")
	var out bytes.Buffer
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	msg := strings.TrimSpace(out.String())
	if err != nil && msg == "" {
		msg = err.Error()
	}
	return msg
}

// TestManPagesRender: every page renders with groff -ww without a warning, and man-db can
// read its NAME line (what whatis and apropos show). A page with an unknown macro must not
// pass, which shows groff reports what this test relies on.
func TestManPagesRender(t *testing.T) {
	lexgrog := requireTool(t, "lexgrog", "man-db")
	for _, p := range pages {
		t.Run(p.page, func(t *testing.T) {
			path := filepath.Join(repoRoot(t), "packaging", "man", p.page)
			if msg := groffCheck(t, path); msg != "" {
				t.Fatalf("groff -man -ww %s = %q, want no warning", p.page, msg)
			}
			out, err := exec.Command(lexgrog, path).CombinedOutput()
			want := path + `: "` + p.program + ` - `
			if err != nil || !strings.HasPrefix(string(out), want) {
				t.Fatalf("lexgrog %s = %q (%v), want a line starting %q", p.page, out, err, want)
			}
		})
	}
	t.Run("unknown-macro-is-caught", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.8")
		text := readFile(t, "packaging/man/anetd.8") + ".NOSUCHMACRO x\n"
		if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg := groffCheck(t, bad); !strings.Contains(msg, "NOSUCHMACRO") {
			t.Fatalf("groff -ww on a page with an unknown macro = %q, want a warning naming it", msg)
		}
	})
}

var fontRE = regexp.MustCompile(`\\f[BIRP]`)

// plain turns roff source into searchable text: escaped dashes and font changes go.
func plain(roff string) string {
	s := strings.ReplaceAll(roff, `\-`, "-")
	s = fontRE.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, `\(en`, "-")
}

// TestManPagesSections: each page has the sections an operator looks for.
func TestManPagesSections(t *testing.T) {
	for _, p := range pages {
		t.Run(p.page, func(t *testing.T) {
			text := readFile(t, "packaging/man/"+p.page)
			for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"} {
				if !regexp.MustCompile(`(?m)^\.SH "?` + sec + `"?$`).MatchString(text) {
					t.Errorf("%s has no .SH %s section", p.page, sec)
				}
			}
		})
	}
}

// TestManPagesDocumentCLI: each page documents every visible command and long flag of its
// program as the program's --help shows it now, so a new flag cannot ship undocumented.
func TestManPagesDocumentCLI(t *testing.T) {
	for _, p := range pages {
		text := plain(readFile(t, "packaging/man/"+p.page))
		for _, n := range cliTree(t, p.program) {
			name := strings.TrimSpace(p.program + " " + strings.Join(n.Path, " "))
			t.Run(name, func(t *testing.T) {
				if !strings.Contains(text, name) {
					t.Errorf("%s does not mention the command %q", p.page, name)
				}
				for _, f := range n.Flags {
					if f == "--help" {
						continue
					}
					if !regexp.MustCompile(regexp.QuoteMeta(f) + `\b`).MatchString(text) {
						t.Errorf("%s does not document %s of %q", p.page, f, name)
					}
				}
			})
		}
	}
}

// TestManPageReasonCodes (F2): anet(1) explains every reason code an operator can meet (all
// kinds but the agent-facing rule codes, which anet-egress(8) lists).
func TestManPageReasonCodes(t *testing.T) {
	text := plain(readFile(t, "packaging/man/anet.1"))
	n := 0
	for _, e := range reasons.All() {
		if e.Kind == reasons.KindRule {
			continue
		}
		n++
		t.Run(string(e.Code), func(t *testing.T) {
			if !regexp.MustCompile(`(?m)^\.B[IR]? ` + regexp.QuoteMeta(string(e.Code)) + `\b`).MatchString(text) {
				t.Errorf("anet.1 does not explain the %s code %s (%q)", e.Kind, e.Code, e.Text)
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d operator-facing codes in the catalog; is pkg/reasons linked?", n)
	}
}

// TestManPageAppArmor (A1, L2): the package does not install the AppArmor profile, and
// anet(1) says so and gives the commands that install and remove it.
func TestManPageAppArmor(t *testing.T) {
	text := plain(readFile(t, "packaging/man/anet.1"))
	for _, want := range []string{
		"package does not install this profile",
		"anet doctor --apparmor-profile | sudo tee /etc/apparmor.d/anet-bwrap",
		"sudo apparmor_parser -r /etc/apparmor.d/anet-bwrap",
		"apparmor_parser -R /etc/apparmor.d/anet-bwrap",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("anet.1 does not say %q", want)
		}
	}
}
