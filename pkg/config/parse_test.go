package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// leaves lists every leaf key of the schema, so tests notice a key added without a case.
func leaves(f *field, prefix string) []string {
	var out []string
	for _, c := range f.children {
		k := prefix + c.name
		if c.children != nil {
			out = append(out, leaves(c, k+".")...)
			continue
		}
		out = append(out, k)
	}
	return out
}

func parseErr(t *testing.T, src string) string {
	t.Helper()
	_, err := Parse("config.yaml", []byte(src))
	if err == nil {
		t.Fatalf("Parse(%q) = nil error, want an error", src)
	}
	return err.Error()
}

// TestDefaults checks every key's default (B2: 20 and 5 runs, S6: 2 GiB, 256 tasks, 180 s).
func TestDefaults(t *testing.T) {
	want := map[string]string{
		"listen":                                    "127.0.0.1:7420",
		"keys_file":                                 "",
		"log_level":                                 "info",
		"auto_reply.backend":                        "exec",
		"auto_reply.agent":                          "claude",
		"auto_reply.trusted":                        "direct",
		"auto_reply.untrusted":                      "sandbox",
		"auto_reply.model":                          "",
		"auto_reply.api_base":                       "",
		"auto_reply.agent_runtime":                  "",
		"auto_reply.api_timeout_seconds":            "180",
		"auto_reply.work_dir":                       "",
		"auto_reply.work_retention":                 "168h",
		"auto_reply.egress_allow":                   "",
		"auto_reply.sandbox.runs_per_day":           "20",
		"auto_reply.sandbox.runs_per_peer_per_day":  "5",
		"auto_reply.sandbox.spend_per_day":          "5.00",
		"auto_reply.sandbox.spend_per_peer_per_day": "1.00",
		"auto_reply.sandbox.memory_max":             "2GiB",
		"auto_reply.sandbox.tasks_max":              "256",
		"auto_reply.sandbox.disk_max":               "2GiB",
		"auto_reply.sandbox.isolation":              "bwrap",
		"auto_reply.sandbox.vm_accel":               "kvm",
		"intake.stranger_pending_max":               "1MiB",
		"intake.strangers_pending_max":              "64MiB",
		"intake.disk_free_min":                      "256MiB",
		"dashboard.listen":                          "",
		"dashboard.metrics_token_file":              "",
	}
	for _, k := range leaves(schema, "") {
		if _, ok := want[k]; !ok {
			t.Errorf("schema key %s has no default case in this test", k)
		}
	}
	c, err := Parse("config.yaml", nil)
	if err != nil {
		t.Fatalf("Parse(empty) = %v", err)
	}
	for k, v := range want {
		t.Run(k, func(t *testing.T) {
			got, err := Get(c, k)
			if err != nil || got != v {
				t.Fatalf("Get(default, %s) = %q, %v, want %q", k, got, err, v)
			}
		})
	}
	typed := Default().AutoReply
	if typed.APITimeout != 180*time.Second || typed.WorkRetention != 7*24*time.Hour ||
		typed.Sandbox.MemoryMax != 2<<30 || typed.Sandbox.DiskMax != 2<<30 || typed.EgressAllow != nil {
		t.Errorf("Default().AutoReply = %+v, want typed defaults", typed)
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("Default().Validate() = %v, want nil", err)
	}
}

func TestEmptyDocumentsAreDefaults(t *testing.T) {
	for name, src := range map[string]string{
		"empty":         "",
		"comment only":  "# nothing set yet\n",
		"document mark": "---\n",
		"null":          "~\n",
		"empty section": "auto_reply:\n  # trusted: sandbox\n",
		"empty list":    "auto_reply:\n  egress_allow:\n  # - pypi.org\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(src))
			if err != nil || !reflect.DeepEqual(c, Default()) {
				t.Fatalf("Parse(%q) = %+v, %v, want defaults", src, c, err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		c, err := Load(filepath.Join(t.TempDir(), "config.yaml"))
		if err != nil || !reflect.DeepEqual(c, Default()) {
			t.Fatalf("Load(missing) = %+v, %v, want defaults", c, err)
		}
	})
	t.Run("unreadable path is an error", func(t *testing.T) {
		if _, err := Load(t.TempDir()); err == nil {
			t.Fatal("Load(directory) = nil error, want one")
		}
	})
}

// TestEnums covers every allowed value of every enum key and refusals naming the allowed set
// (P1, P4, E10).
func TestEnums(t *testing.T) {
	good := []struct{ key, section, value string }{
		{"log_level", "", "debug"}, {"log_level", "", "info"}, {"log_level", "", "warn"}, {"log_level", "", "error"},
		{"backend", "auto_reply", "exec"}, {"backend", "auto_reply", "openai"},
		{"agent", "auto_reply", "claude"}, {"agent", "auto_reply", "codex"}, {"agent", "auto_reply", "opencode"},
		{"agent", "auto_reply", "hermes"}, {"agent", "auto_reply", "openclaw"}, {"agent", "auto_reply", "cursor"},
		{"trusted", "auto_reply", "direct"}, {"trusted", "auto_reply", "sandbox"}, {"trusted", "auto_reply", "off"},
		{"untrusted", "auto_reply", "sandbox"}, {"untrusted", "auto_reply", "off"},
	}
	for _, g := range good {
		key := g.key
		src := g.key + ": " + g.value + "\n"
		if g.section != "" {
			key = g.section + "." + g.key
			src = g.section + ":\n  " + src
		}
		t.Run("good/"+key+"="+g.value, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Parse(%q) = %v", src, err)
			}
			if got, _ := Get(c, key); got != g.value {
				t.Fatalf("Get(%s) = %q, want %q", key, got, g.value)
			}
		})
	}
	if c, _ := Parse("c", []byte("auto_reply:\n  untrusted: off\n  trusted: sandbox\n")); c.AutoReply.Untrusted != ModeOff || c.AutoReply.Trusted != ModeSandbox {
		t.Errorf("typed modes = %q/%q, want off/sandbox", c.AutoReply.Untrusted, c.AutoReply.Trusted)
	}
	bad := []struct{ name, src, want string }{
		{"trusted maybe", "auto_reply:\n  backend: exec\n  trusted: maybe\n",
			`config.yaml:3: auto_reply.trusted: "maybe" is not allowed (allowed: direct, sandbox, off)`},
		{"untrusted direct", "auto_reply:\n  untrusted: direct\n",
			`config.yaml:2: auto_reply.untrusted: "direct" is not allowed (allowed: sandbox, off)`},
		{"agent upper case", "auto_reply:\n  agent: Claude\n",
			`config.yaml:2: auto_reply.agent: "Claude" is not allowed (allowed: claude, codex, opencode, hermes, openclaw, cursor)`},
		{"backend", "auto_reply:\n  backend: http\n",
			`config.yaml:2: auto_reply.backend: "http" is not allowed (allowed: exec, openai)`},
		{"log level", "log_level: trace\n",
			`config.yaml:1: log_level: "trace" is not allowed (allowed: debug, info, warn, error)`},
		{"empty string", "log_level: \"\"\n",
			`config.yaml:1: log_level: "" is not allowed (allowed: debug, info, warn, error)`},
	}
	for _, b := range bad {
		t.Run("bad/"+b.name, func(t *testing.T) {
			if got := parseErr(t, b.src); got != b.want {
				t.Fatalf("Parse error = %q, want %q", got, b.want)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"168h", 168 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"0d", 0}, {"0", 0}, {"90m", 90 * time.Minute},
		{"1h30m", 90 * time.Minute}, {"36500d", 36500 * 24 * time.Hour},
	}
	for _, g := range good {
		t.Run(g.in, func(t *testing.T) {
			if got, err := ParseDuration(g.in); err != nil || got != g.want {
				t.Fatalf("ParseDuration(%q) = %v, %v, want %v", g.in, got, err, g.want)
			}
		})
	}
	for _, in := range []string{"7days", "d", "1.5d", "7", "", "week", "999999999999d", "7d12h"} {
		t.Run("bad "+in, func(t *testing.T) {
			if got, err := ParseDuration(in); err == nil {
				t.Fatalf("ParseDuration(%q) = %v, nil, want an error", in, got)
			}
		})
	}
	for _, d := range []time.Duration{0, time.Second, 90 * time.Minute, 168 * time.Hour, 1500 * time.Millisecond} {
		if got, err := ParseDuration(FormatDuration(d)); err != nil || got != d {
			t.Errorf("ParseDuration(FormatDuration(%v)) = %v, %v", d, got, err)
		}
	}
}

// TestValueRanges checks bounds in the file, with the message naming key, line and limit.
func TestValueRanges(t *testing.T) {
	const sb = "auto_reply:\n  sandbox:\n    "
	ok := []struct{ name, src string }{
		{"memory_max minimum", sb + "memory_max: 16MiB\n"},
		{"disk_max minimum", sb + "disk_max: 1MiB\n"},
		{"disk_max bytes unquoted", sb + "disk_max: 2147483648\n"},
		{"tasks_max minimum", sb + "tasks_max: 8\n"},
		{"runs_per_day zero (B3)", sb + "runs_per_day: 0\n"},
		{"runs_per_peer_per_day zero (B3)", sb + "runs_per_peer_per_day: 0\n"},
		{"spend_per_day zero (K2)", sb + "spend_per_day: 0\n"},
		{"spend_per_day quoted (K2)", sb + "spend_per_day: \"12.50\"\n"},
		{"spend_per_peer_per_day micro-units (K2)", sb + "spend_per_peer_per_day: 0.000001\n"},
		{"timeout 1", "auto_reply:\n  api_timeout_seconds: 1\n"},
		{"timeout 86400", "auto_reply:\n  api_timeout_seconds: 86400\n"},
		{"retention 0", "auto_reply:\n  work_retention: 0\n"},
		{"retention days", "auto_reply:\n  work_retention: 30d\n"},
		{"strangers' quota 0 (N1: closed to strangers)", "intake:\n  stranger_pending_max: 0\n  strangers_pending_max: 0\n"},
		{"strangers' quota equal to one stranger's", "intake:\n  stranger_pending_max: 4MiB\n  strangers_pending_max: 4MiB\n"},
		{"disk guard off", "intake:\n  disk_free_min: 0\n"},
		{"dashboard on IPv4 loopback", "dashboard:\n  listen: \"127.0.0.1:7421\"\n"},
		{"dashboard on IPv6 loopback", "dashboard:\n  listen: \"[::1]:7421\"\n"},
		{"dashboard on localhost", "dashboard:\n  listen: localhost:7421\n  metrics_token_file: /etc/anet/metrics.token\n"},
	}
	for _, o := range ok {
		t.Run("ok/"+o.name, func(t *testing.T) {
			if _, err := Parse("config.yaml", []byte(o.src)); err != nil {
				t.Fatalf("Parse(%q) = %v, want nil", o.src, err)
			}
		})
	}
	bad := []struct{ name, src, want string }{
		{"memory_max small", sb + "memory_max: 8MiB\n", "config.yaml:3: auto_reply.sandbox.memory_max: 8MiB is too small (minimum 16MiB)"},
		{"disk_max small", sb + "disk_max: 1048575\n", "config.yaml:3: auto_reply.sandbox.disk_max: 1048575 is too small (minimum 1MiB)"},
		{"tasks_max small", sb + "tasks_max: 7\n", "config.yaml:3: auto_reply.sandbox.tasks_max: 7 is too small (minimum 8)"},
		{"runs_per_day negative", sb + "runs_per_day: -1\n", "config.yaml:3: auto_reply.sandbox.runs_per_day: -1 is too small (minimum 0)"},
		{"memory_max decimal unit", sb + "memory_max: 2GB\n", `config.yaml:3: auto_reply.sandbox.memory_max: "2GB" is not a size`},
		{"spend negative (K2)", sb + "spend_per_day: -1\n", `config.yaml:3: auto_reply.sandbox.spend_per_day: "-1" is not an amount`},
		{"spend exponent (K2)", sb + "spend_per_day: 1e3\n", `config.yaml:3: auto_reply.sandbox.spend_per_day: "1e3" is not an amount`},
		{"spend too fine (K2)", sb + "spend_per_peer_per_day: \"0.0000001\"\n", `config.yaml:3: auto_reply.sandbox.spend_per_peer_per_day: "0.0000001" has more than 6 digits`},
		{"spend with currency (K2)", sb + "spend_per_day: $5\n", `config.yaml:3: auto_reply.sandbox.spend_per_day: "$5" is not an amount`},
		{"spend a list (K2)", sb + "spend_per_day: [5]\n", `config.yaml:3: auto_reply.sandbox.spend_per_day: expected an amount such as "5.00", got a list`},
		{"timeout 0", "auto_reply:\n  api_timeout_seconds: 0\n", "config.yaml:2: auto_reply.api_timeout_seconds: 0 is out of range (allowed: whole seconds, 1 to 86400)"},
		{"timeout negative", "auto_reply:\n  api_timeout_seconds: -5\n", "config.yaml:2: auto_reply.api_timeout_seconds: -5 is out of range"},
		{"timeout 86401", "auto_reply:\n  api_timeout_seconds: 86401\n", "config.yaml:2: auto_reply.api_timeout_seconds: 86401 is out of range"},
		{"timeout huge", "auto_reply:\n  api_timeout_seconds: 99999999999999999\n", "config.yaml:2: auto_reply.api_timeout_seconds: 99999999999999999 is out of range"},
		{"retention negative", "auto_reply:\n  work_retention: -1h\n", "config.yaml:2: auto_reply.work_retention: -1h0m0s is negative"},
		{"retention bad", "auto_reply:\n  work_retention: 1week\n", `config.yaml:2: auto_reply.work_retention: "1week" is not a duration`},
		{"work_dir relative", "auto_reply:\n  work_dir: work\n", `config.yaml:2: auto_reply.work_dir: "work" is not an absolute path`},
		{"keys_file relative", "keys_file: ~/keys.yaml\n", `config.yaml:1: keys_file: "~/keys.yaml" is not an absolute path`},
		{"model with space", "auto_reply:\n  model: claude haiku\n", `config.yaml:2: auto_reply.model: "claude haiku" must be a model identifier`},
		{"strangers' quota below one stranger's", "intake:\n  stranger_pending_max: 2MiB\n  strangers_pending_max: 1MiB\n",
			"config.yaml:3: intake.strangers_pending_max: 1MiB is less than intake.stranger_pending_max (2MiB)"},
		{"stranger quota decimal unit", "intake:\n  stranger_pending_max: 1MB\n", `config.yaml:2: intake.stranger_pending_max: "1MB" is not a size`},
		{"disk floor negative", "intake:\n  disk_free_min: -1\n", `config.yaml:2: intake.disk_free_min: "-1" is not a size`},
		{"dashboard on all interfaces", "dashboard:\n  listen: \"0.0.0.0:7421\"\n", `config.yaml:2: dashboard.listen: "0.0.0.0:7421" is not a loopback address`},
		{"dashboard with no host", "dashboard:\n  listen: \":7421\"\n", `config.yaml:2: dashboard.listen: ":7421" is not a loopback address`},
		{"dashboard on a LAN address", "dashboard:\n  listen: \"192.168.1.2:7421\"\n", `config.yaml:2: dashboard.listen: "192.168.1.2:7421" is not a loopback address`},
		{"dashboard on another loopback", "dashboard:\n  listen: \"127.0.0.2:7421\"\n", `config.yaml:2: dashboard.listen: "127.0.0.2:7421" is not a loopback address`},
		{"dashboard on a name", "dashboard:\n  listen: \"dash.example:7421\"\n", `config.yaml:2: dashboard.listen: "dash.example:7421" is not a loopback address`},
		{"dashboard without a port", "dashboard:\n  listen: \"127.0.0.1\"\n", `config.yaml:2: dashboard.listen: "127.0.0.1" is not host:port`},
		{"dashboard port 0", "dashboard:\n  listen: \"127.0.0.1:0\"\n", `config.yaml:2: dashboard.listen: "127.0.0.1:0" has an invalid port`},
		{"dashboard port with a sign", "dashboard:\n  listen: \"127.0.0.1:+80\"\n", `config.yaml:2: dashboard.listen: "127.0.0.1:+80" has an invalid port`},
		{"metrics token file relative", "dashboard:\n  metrics_token_file: metrics.token\n", `config.yaml:2: dashboard.metrics_token_file: "metrics.token" is not an absolute path`},
	}
	for _, b := range bad {
		t.Run("bad/"+b.name, func(t *testing.T) {
			if got := parseErr(t, b.src); !strings.HasPrefix(got, b.want) {
				t.Fatalf("Parse error = %q, want prefix %q", got, b.want)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"top level", "listen: \"\"\nlog_level: info\nauto_replyy:\n  trusted: off\n",
			`config.yaml:3: unknown key "auto_replyy" (known: listen, keys_file, log_level, auto_reply, intake, dashboard)`},
		{"auto_reply", "auto_reply:\n  trusted: off\n  modle: x\n",
			`config.yaml:3: unknown key "auto_reply.modle" (known: backend, agent, trusted, untrusted, model, api_base, agent_runtime, api_timeout_seconds, work_dir, work_retention, egress_allow, sandbox)`},
		{"sandbox", "auto_reply:\n  sandbox:\n    runs_per_day: 3\n\n    runs_per_dya: 3\n",
			`config.yaml:5: unknown key "auto_reply.sandbox.runs_per_dya" (known: runs_per_day, runs_per_peer_per_day, spend_per_day, spend_per_peer_per_day, memory_max, tasks_max, disk_max, isolation, vm_accel)`},
		{"merge key", "base: &b {listen: x}\n<<: *b\n", `config.yaml:1: unknown key "base"`},
		{"non-string key", "1: x\n", `config.yaml:1: keys must be plain names`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseErr(t, c.src)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("Parse error = %q, want prefix %q", got, c.want)
			}
		})
	}
	t.Run("every problem reported with its line", func(t *testing.T) {
		_, err := Parse("config.yaml", []byte("a: 1\nlisten: \"\"\nb: 2\n"))
		var e *Error
		if !errors.As(err, &e) || e.Line != 1 || e.Key != "a" {
			t.Fatalf("first error = %#v, want line 1 key a", e)
		}
		if !strings.Contains(err.Error(), "config.yaml:3: unknown key \"b\"") {
			t.Fatalf("Parse error = %q, want the second unknown key too", err)
		}
	})
}

func TestWrongTypes(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"string got list", "listen: [a]\n", "config.yaml:1: listen: expected a string, got a list"},
		{"string got int", "auto_reply:\n  model: 5\n", "config.yaml:2: auto_reply.model: expected a string, got the integer 5 (quote it to make it a string)"},
		{"enum got bool", "auto_reply:\n  trusted: true\n", "config.yaml:2: auto_reply.trusted: expected a string, got the boolean true"},
		{"string got null", "keys_file: ~\n", "config.yaml:1: keys_file: expected a string, got no value"},
		{"int got string", "auto_reply:\n  sandbox:\n    runs_per_day: \"20\"\n", `config.yaml:3: auto_reply.sandbox.runs_per_day: expected an integer, got the string "20"`},
		{"int got float", "auto_reply:\n  api_timeout_seconds: 1.5\n", "config.yaml:2: auto_reply.api_timeout_seconds: expected an integer, got the number 1.5"},
		{"int overflow", "auto_reply:\n  sandbox:\n    tasks_max: 99999999999999999999\n", "config.yaml:3: auto_reply.sandbox.tasks_max: expected an integer, got the number"},
		{"section got scalar", "auto_reply: 3\n", "config.yaml:1: auto_reply: expected a mapping (known: backend,"},
		{"list got string", "auto_reply:\n  egress_allow: pypi.org\n", `config.yaml:2: auto_reply.egress_allow: expected a list of host names, got the string "pypi.org"`},
		{"list item mapping", "auto_reply:\n  egress_allow:\n    - pypi.org\n    - {a: b}\n", "config.yaml:4: auto_reply.egress_allow: item 2: expected a string, got a mapping"},
		{"size got list", "auto_reply:\n  sandbox:\n    disk_max: []\n", "config.yaml:3: auto_reply.sandbox.disk_max: expected a size such as 2GiB, got a list"},
		{"alias", "auto_reply:\n  model: &m x\n  api_base: *m\n", "config.yaml:3: auto_reply.api_base: aliases (*name) are not supported"},
		{"root list", "- listen\n", "config.yaml:1: the file must be a mapping of keys"},
		{"tagged", "listen: !!binary aGk=\n", "config.yaml:1: listen: expected a string, got a value tagged !!binary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseErr(t, c.src); !strings.HasPrefix(got, c.want) {
				t.Fatalf("Parse error = %q, want prefix %q", got, c.want)
			}
		})
	}
}

func TestDuplicateKeys(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"top level", "listen: \"\"\nlisten: 127.0.0.1:1\n", `config.yaml:2: duplicate key "listen" (first set on line 1)`},
		{"nested", "auto_reply:\n  sandbox:\n    tasks_max: 8\n    tasks_max: 9\n", `config.yaml:4: duplicate key "auto_reply.sandbox.tasks_max" (first set on line 3)`},
		{"section", "auto_reply: {}\nauto_reply:\n  trusted: off\n", `config.yaml:2: duplicate key "auto_reply" (first set on line 1)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseErr(t, c.src); got != c.want {
				t.Fatalf("Parse error = %q, want %q", got, c.want)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"bad indentation", "listen: a\n  log_level: b\n", "config.yaml:2: invalid YAML: mapping values are not allowed"},
		{"second document", "listen: \"\"\n---\nlog_level: info\n", "config.yaml:2: a second YAML document"},
		{"tab", "auto_reply:\n\ttrusted: off\n", "config.yaml:2: invalid YAML"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseErr(t, c.src); !strings.HasPrefix(got, c.want) {
				t.Fatalf("Parse error = %q, want prefix %q", got, c.want)
			}
		})
	}
}

func TestLoadNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("log_level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":1: log_level:") {
		t.Fatalf("Load error = %v, want it to start with %s:1: log_level:", err, path)
	}
}

// Load reads at most maxFileSize bytes: a huge file (or a device) named as the config cannot
// make the CLI or anetd read without bound.
func TestLoadRefusesHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	huge := append([]byte("# "), bytes.Repeat([]byte("x"), maxFileSize)...)
	if err := os.WriteFile(path, huge, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", maxFileSize)) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load(%d-byte file) = %v, want a size error naming the path", len(huge), err)
	}
}

// TestIntegersAreDecimalOnly: yaml.v3 reads 010 as 8 and takes 0x10, 0o777, 0b111, +5 and
// 1_000 as integers; the file's integers are decimal digits only, and any other form is
// refused naming the file, line and key, so `runs_per_day: 010` is never enforced as 8 (B2).
func TestIntegersAreDecimalOnly(t *testing.T) {
	const runs = "auto_reply:\n  sandbox:\n    runs_per_day: %s\n"
	cases := []struct{ name, src, want string }{
		{"leading zero", fmt.Sprintf(runs, "010"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "010" is not a decimal integer`},
		{"hex", fmt.Sprintf(runs, "0x10"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "0x10" is not a decimal integer`},
		{"binary", fmt.Sprintf(runs, "0b111"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "0b111" is not a decimal integer`},
		{"octal", fmt.Sprintf(runs, "0o777"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "0o777" is not a decimal integer`},
		{"plus", fmt.Sprintf(runs, "+5"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "+5" is not a decimal integer`},
		{"underscore", fmt.Sprintf(runs, "1_0"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "1_0" is not a decimal integer`},
		{"minus zero", fmt.Sprintf(runs, "-0"), `config.yaml:3: auto_reply.sandbox.runs_per_day: "-0" is not a decimal integer`},
		{"tagged", fmt.Sprintf(runs, `!!int "0x10"`), `config.yaml:3: auto_reply.sandbox.runs_per_day: "0x10" is not a decimal integer`},
		{"seconds", "auto_reply:\n  api_timeout_seconds: 0x3c\n", `config.yaml:2: auto_reply.api_timeout_seconds: "0x3c" is not a decimal integer`},
		{"size", "auto_reply:\n  sandbox:\n    disk_max: 010\n", `config.yaml:3: auto_reply.sandbox.disk_max: "010" is not a decimal integer`},
		{"amount", "auto_reply:\n  sandbox:\n    spend_per_day: 0x5\n", `config.yaml:3: auto_reply.sandbox.spend_per_day: "0x5" is not a decimal integer`},
		{"duration", "auto_reply:\n  work_retention: 0o7\n", `config.yaml:2: auto_reply.work_retention: "0o7" is not a decimal integer`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseErr(t, c.src); !strings.HasPrefix(got, c.want) {
				t.Fatalf("Parse(%q) error = %q, want prefix %q", c.src, got, c.want)
			}
		})
	}
	for _, v := range []struct {
		src  string
		want int
	}{{"0", 0}, {"8", 8}, {"10", 10}, {"200", 200}} {
		t.Run("accepts "+v.src, func(t *testing.T) {
			c, err := Parse("config.yaml", []byte(fmt.Sprintf(runs, v.src)))
			if err != nil || c.AutoReply.Sandbox.RunsPerDay != v.want {
				t.Fatalf("Parse(runs_per_day: %s) = %d, %v, want %d, nil", v.src, c.AutoReply.Sandbox.RunsPerDay, err, v.want)
			}
		})
	}
}
