package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// operatorFile has the layout an operator writes: comments everywhere, blank lines, 4-space
// indentation, a quoted value, a block list with a comment between items.
const operatorFile = `# ANet node configuration
# (edited by hand)

listen: "127.0.0.1:7420"   # peers connect here

auto_reply:
    # who may make my agent work
    trusted: direct      # my friends
    untrusted: sandbox

    egress_allow:
        - pypi.org         # python packages
        # npm comes next
        - registry.npmjs.org
    model: 'claude-haiku-5-5'
# end of file
`

func writeFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSetKeepsTheFile checks that Set changes only the value: every other byte of the
// operator's file, comments and order included, is kept.
func TestSetKeepsTheFile(t *testing.T) {
	cases := []struct {
		name, key, value string
		old, new         string // the one region that changes
	}{
		{"scalar with comment", "auto_reply.trusted", "sandbox",
			"    trusted: direct      # my friends\n", "    trusted: sandbox      # my friends\n"},
		{"quoted value", "listen", "[::1]:7420",
			`listen: "127.0.0.1:7420"   # peers connect here`, `listen: '[::1]:7420'   # peers connect here`},
		{"single quoted value", "auto_reply.model", "",
			"model: 'claude-haiku-5-5'", `model: ""`},
		{"string that looks like a number", "auto_reply.model", "5",
			"model: 'claude-haiku-5-5'", `model: "5"`},
		{"block list replaced", "auto_reply.egress_allow", "pypi.org, files.pythonhosted.org",
			"        - pypi.org         # python packages\n        # npm comes next\n        - registry.npmjs.org\n",
			"        - pypi.org\n        - files.pythonhosted.org\n        # npm comes next\n"},
		{"block list emptied (H1)", "auto_reply.egress_allow", "",
			"    egress_allow:\n        - pypi.org         # python packages\n        # npm comes next\n        - registry.npmjs.org\n",
			"    egress_allow: []\n        # npm comes next\n"},
		{"missing key in section", "auto_reply.untrusted", "off",
			"    untrusted: sandbox\n", "    untrusted: off\n"},
		{"missing key appended to section", "auto_reply.api_timeout_seconds", "600",
			"    model: 'claude-haiku-5-5'\n", "    model: 'claude-haiku-5-5'\n    api_timeout_seconds: 600\n"},
		{"missing section created", "auto_reply.sandbox.runs_per_day", "3",
			"    model: 'claude-haiku-5-5'\n", "    model: 'claude-haiku-5-5'\n    sandbox:\n        runs_per_day: 3\n"},
		{"amount kept as written (K2)", "auto_reply.sandbox.spend_per_day", "2.50",
			"    model: 'claude-haiku-5-5'\n", "    model: 'claude-haiku-5-5'\n    sandbox:\n        spend_per_day: \"2.50\"\n"},
		{"missing top-level key", "log_level", "debug",
			"    model: 'claude-haiku-5-5'\n", "    model: 'claude-haiku-5-5'\nlog_level: debug\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(operatorFile, c.old) {
				t.Fatalf("test bug: %q not in the file", c.old)
			}
			path := writeFile(t, operatorFile, 0o600)
			if err := Set(path, c.key, c.value); err != nil {
				t.Fatalf("Set(%s, %q) = %v", c.key, c.value, err)
			}
			want := strings.Replace(operatorFile, c.old, c.new, 1)
			if got := readFile(t, path); got != want {
				t.Fatalf("after Set(%s, %q) file =\n%s\nwant\n%s", c.key, c.value, got, want)
			}
			cfg, err := Load(path)
			if err != nil {
				t.Fatalf("Load after Set = %v", err)
			}
			if got, _ := Get(cfg, c.key); got != strings.ReplaceAll(c.value, " ", "") {
				t.Fatalf("Get(%s) after Set = %q, want %q", c.key, got, c.value)
			}
		})
	}
}

// TestSetFallbackKeepsComments covers layouts the text splice does not handle: the tree is
// re-encoded, and comments and order still survive.
func TestSetFallbackKeepsComments(t *testing.T) {
	src := "# head comment kept\nauto_reply: {trusted: direct, untrusted: off}  # inline section\nlisten: \"\"\n"
	path := writeFile(t, src, 0o600)
	if err := Set(path, "auto_reply.trusted", "sandbox"); err != nil {
		t.Fatalf("Set = %v", err)
	}
	got := readFile(t, path)
	for _, line := range []string{"# head comment kept\n", "# inline section"} {
		if !strings.Contains(got, line) {
			t.Errorf("file after Set lost %q:\n%s", line, got)
		}
	}
	if strings.Index(got, "auto_reply") > strings.Index(got, "listen") {
		t.Errorf("file after Set changed the key order:\n%s", got)
	}
	cfg, err := Load(path)
	if err != nil || cfg.AutoReply.Trusted != ModeSandbox || cfg.AutoReply.Untrusted != ModeOff || cfg.Listen != "" {
		t.Fatalf("Load after Set = %+v, %v", cfg, err)
	}
}

// TestSetRefusesBadValues leaves the file byte-identical and names the key and the rule.
func TestSetRefusesBadValues(t *testing.T) {
	cases := []struct{ name, key, value, want string }{
		{"enum", "auto_reply.trusted", "maybe", `config.yaml:8: auto_reply.trusted: "maybe" is not allowed (allowed: direct, sandbox, off)`},
		{"egress wildcard (H2)", "auto_reply.egress_allow", "pypi.org,*.npmjs.org", `auto_reply.egress_allow: entry "*.npmjs.org": wildcards are not allowed; list each host name in full (H2)`},
		{"egress model host (H3)", "auto_reply.egress_allow", "api.openai.com", `auto_reply.egress_allow: entry "api.openai.com": is a model-service host`},
		{"egress empty item", "auto_reply.egress_allow", "pypi.org,,x.org", "config set auto_reply.egress_allow: entry 2 of the comma-separated list is empty"},
		{"integer", "auto_reply.sandbox.tasks_max", "lots", `config set auto_reply.sandbox.tasks_max: "lots" is not a decimal integer`},
		{"octal-looking (B2)", "auto_reply.sandbox.runs_per_day", "010", `config set auto_reply.sandbox.runs_per_day: "010" is not a decimal integer`},
		{"hex (B2)", "auto_reply.sandbox.runs_per_day", "0x10", `config set auto_reply.sandbox.runs_per_day: "0x10" is not a decimal integer`},
		{"binary", "auto_reply.sandbox.tasks_max", "0b111", `config set auto_reply.sandbox.tasks_max: "0b111" is not a decimal integer`},
		{"octal", "auto_reply.api_timeout_seconds", "0o777", `config set auto_reply.api_timeout_seconds: "0o777" is not a decimal integer`},
		{"plus sign", "auto_reply.sandbox.runs_per_day", "+5", `config set auto_reply.sandbox.runs_per_day: "+5" is not a decimal integer`},
		{"range", "auto_reply.sandbox.tasks_max", "4", "auto_reply.sandbox.tasks_max: 4 is too small (minimum 8)"},
		{"size", "auto_reply.sandbox.memory_max", "2G", `auto_reply.sandbox.memory_max: "2G" is not a size`},
		{"amount (K2)", "auto_reply.sandbox.spend_per_day", "5,00", `auto_reply.sandbox.spend_per_day: "5,00" is not an amount`},
		{"unknown key", "auto_reply.trustd", "off", `config set: unknown key "auto_reply.trustd" (known: backend,`},
		{"section", "auto_reply", "x", "config set auto_reply: this is a section"},
		{"newline", "auto_reply.model", "a\nb: c", "config set auto_reply.model: the value must be one line"},
		{"E10", "auto_reply.api_base", "https://llm.example.com", "auto_reply.api_base must be empty or https://api.anthropic.com for the claude agent"},
		{"dashboard off loopback (C4)", "dashboard.listen", "0.0.0.0:7421", `dashboard.listen: "0.0.0.0:7421" is not a loopback address`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, operatorFile, 0o600)
			before, _ := os.Stat(path)
			err := Set(path, c.key, c.value)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Set(%s, %q) = %v, want %q", c.key, c.value, err, c.want)
			}
			if got := readFile(t, path); got != operatorFile {
				t.Fatalf("Set(%s) refused but changed the file to\n%s", c.key, got)
			}
			after, _ := os.Stat(path)
			if !os.SameFile(before, after) {
				t.Fatalf("Set(%s) refused but replaced the file", c.key)
			}
			assertNoTempFiles(t, filepath.Dir(path))
		})
	}
	t.Run("invalid elsewhere in the file", func(t *testing.T) {
		src := "log_level: loud\n"
		path := writeFile(t, src, 0o600)
		err := Set(path, "listen", "")
		if err == nil || !strings.Contains(err.Error(), `log_level: "loud" is not allowed`) || readFile(t, path) != src {
			t.Fatalf("Set on an invalid file = %v, want the existing error and the file unchanged", err)
		}
	})
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestSetCreatesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "xdg", "anet")
	path := filepath.Join(dir, "config.yaml")
	if err := Set(path, "auto_reply.sandbox.runs_per_peer_per_day", "2"); err != nil {
		t.Fatalf("Set(missing file) = %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created file mode = %v, %v, want 0600", fi.Mode(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("created dir mode = %v, %v, want 0700", di.Mode(), err)
	}
	if got, want := readFile(t, path), "auto_reply:\n  sandbox:\n    runs_per_peer_per_day: 2\n"; got != want {
		t.Fatalf("created file = %q, want %q", got, want)
	}
	if err := Set(path, "auto_reply.sandbox.runs_per_day", "9"); err != nil {
		t.Fatalf("second Set = %v", err)
	}
	cfg, err := Load(path)
	if err != nil || cfg.AutoReply.Sandbox.RunsPerDay != 9 || cfg.AutoReply.Sandbox.RunsPerPeerPerDay != 2 {
		t.Fatalf("Load = %+v, %v, want runs 9/2", cfg.AutoReply.Sandbox, err)
	}
	assertNoTempFiles(t, dir)

	// C4: the dashboard section is written the same way, and reads back.
	if err := Set(path, "dashboard.listen", "127.0.0.1:7421"); err != nil {
		t.Fatalf("Set(dashboard.listen) = %v", err)
	}
	if cfg, err := Load(path); err != nil || cfg.Dashboard.Listen != "127.0.0.1:7421" {
		t.Fatalf("Load after Set(dashboard.listen) = %+v, %v", cfg.Dashboard, err)
	}

	t.Run("comment-only file keeps its comments", func(t *testing.T) {
		path := writeFile(t, "# my notes\n# more", 0o600)
		if err := Set(path, "log_level", "warn"); err != nil {
			t.Fatal(err)
		}
		if got, want := readFile(t, path), "# my notes\n# more\nlog_level: warn\n"; got != want {
			t.Fatalf("file = %q, want %q", got, want)
		}
	})
}

func TestSetKeepsModeAndSymlink(t *testing.T) {
	path := writeFile(t, "listen: \"\"\n", 0o640)
	link := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := Set(link, "log_level", "error"); err != nil {
		t.Fatalf("Set(symlink) = %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("Set replaced the symlink itself: %v, %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("Set changed the file mode to %v, want 0640", fi.Mode().Perm())
	}
	if got := readFile(t, path); got != "listen: \"\"\nlog_level: error\n" {
		t.Fatalf("target after Set = %q", got)
	}
}

// TestSetWithCheck lets the CLI add the work-root rule (S3), which needs the paths.
func TestSetWithCheck(t *testing.T) {
	p := Paths{CacheDir: "/home/op/.cache/anet"}
	path := writeFile(t, "listen: \"\"\n", 0o600)
	err := SetWith(path, "auto_reply.work_dir", "/home/op/.cache/anet", p.CheckWorkRoots)
	if err == nil || !strings.Contains(err.Error(), "auto_reply.work_dir:") || !strings.Contains(err.Error(), "(S3)") {
		t.Fatalf("SetWith(work_dir over the sandbox root) = %v, want the S3 refusal", err)
	}
	if readFile(t, path) != "listen: \"\"\n" {
		t.Fatal("refused SetWith changed the file")
	}
	if err := SetWith(path, "auto_reply.work_dir", "/srv/anet-work", p.CheckWorkRoots); err != nil {
		t.Fatalf("SetWith(separate work_dir) = %v", err)
	}
}
