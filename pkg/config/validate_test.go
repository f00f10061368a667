package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestAPIBase(t *testing.T) {
	good := []string{
		"https://api.example.com", "https://openrouter.ai/api/v1", "https://llm.example.com:8443/v1/",
	}
	for _, g := range good {
		t.Run("good "+g, func(t *testing.T) {
			c := Default()
			c.AutoReply.Agent, c.AutoReply.APIBase = AgentOpencode, g
			if err := c.Validate(); err != nil {
				t.Fatalf("Validate(api_base=%q) = %v, want nil", g, err)
			}
		})
	}
	bad := []struct{ name, in, want string }{
		// The endpoint's rule (E11): the key is sent to api_base, so https only, loopback too.
		{"http remote", "http://api.example.com/v1", "must be an absolute https URL"},
		{"http private ip", "http://10.0.0.1/v1", "must be an absolute https URL"},
		{"http loopback", "http://127.0.0.1:8080/v1", "must be an absolute https URL"},
		{"http localhost", "http://localhost:1", "must be an absolute https URL"},
		{"no scheme", "api.example.com", "must be an absolute https URL"},
		{"ftp", "ftp://api.example.com", "must be an absolute https URL"},
		{"no host", "https:///v1", "must be an absolute https URL"},
		{"user info", "https://user:s3cret-key@api.example.com/v1", "must not contain user info"},
		{"query", "https://api.example.com/v1?key=s3cret-key", "must not contain a query"},
		{"empty query", "https://api.example.com/v1?", "must not contain a query"},
		{"fragment", "https://api.example.com/v1#s3cret-key", "must not contain a fragment"},
		{"port 0", "https://api.example.com:0/v1", "has an invalid port"},
		{"newline", "https://api.example.com/\nx", "must be a URL on one line"},
	}
	for _, b := range bad {
		t.Run("bad "+b.name, func(t *testing.T) {
			c := Default()
			c.AutoReply.Agent, c.AutoReply.APIBase = AgentOpencode, b.in
			err := c.Validate()
			var ce *Error
			if err == nil || !strings.Contains(err.Error(), "auto_reply.api_base must be an https URL") || !strings.Contains(err.Error(), b.want) ||
				!errors.As(err, &ce) || ce.Reason() != "api_base_invalid" {
				t.Fatalf("Validate(api_base=%q) = %v, want api_base_invalid with %q", b.in, err, b.want)
			}
			// A pasted key must never be echoed into logs through the error.
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("Validate(api_base) error %q repeats the secret", err)
			}
		})
	}
}

// TestClaudeUpstream checks E10: the claude agent's upstream is api.anthropic.com and a
// different api_base is refused; agents that need api_base accept one.
func TestClaudeUpstream(t *testing.T) {
	cases := []struct {
		name    string
		agent   Agent
		base    string
		refused bool
	}{
		{"claude foreign", AgentClaude, "https://llm.example.com/v1", true},
		{"claude anthropic", AgentClaude, "https://api.anthropic.com", false},
		{"claude anthropic upper case", AgentClaude, "https://API.Anthropic.com", false},
		{"claude loopback http", AgentClaude, "http://127.0.0.1:9999", true},
		{"claude anthropic other port", AgentClaude, "https://api.anthropic.com:8443", true},
		{"claude none", AgentClaude, "", false},
		{"opencode foreign", AgentOpencode, "https://llm.example.com/v1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			cfg.AutoReply.Agent, cfg.AutoReply.APIBase = c.agent, c.base
			err := cfg.Validate()
			if got := err != nil; got != c.refused {
				t.Fatalf("Validate(agent=%s, api_base=%q) = %v, want refused=%v", c.agent, c.base, err, c.refused)
			}
			if c.refused && !strings.Contains(err.Error(), "auto_reply.api_base must be") {
				t.Fatalf("Validate error = %q, want the api_base rule's sentence", err)
			}
		})
	}
	t.Run("in file with line", func(t *testing.T) {
		got := parseErr(t, "auto_reply:\n  agent: claude\n  api_base: https://llm.example.com\n")
		if !strings.HasPrefix(got, "config.yaml:3: auto_reply.api_base must be empty or https://api.anthropic.com for the claude agent") {
			t.Fatalf("Parse error = %q, want line 3", got)
		}
	})
}

func TestListen(t *testing.T) {
	for _, g := range []string{"", "127.0.0.1:7420", "[::1]:7420", ":7420", "0.0.0.0:1", "node.example.com:7420", "localhost:65535"} {
		t.Run("good "+g, func(t *testing.T) {
			if err := checkListen(g); err != nil {
				t.Fatalf("checkListen(%q) = %v, want nil", g, err)
			}
		})
	}
	for _, b := range []string{"7420", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:http", "bad host:1", "::1:7420", "-x.com:1"} {
		t.Run("bad "+b, func(t *testing.T) {
			if err := checkListen(b); err == nil {
				t.Fatalf("checkListen(%q) = nil, want an error", b)
			}
		})
	}
	got := parseErr(t, "listen: 127.0.0.1\n")
	if want := `config.yaml:1: listen: "127.0.0.1" is not host:port`; !strings.HasPrefix(got, want) {
		t.Fatalf("Parse error = %q, want prefix %q", got, want)
	}
}

// TestValidateCode holds a Config built in code to the file's rules (fail closed twice).
func TestValidateCode(t *testing.T) {
	c := Default()
	c.AutoReply.Untrusted = ModeDirect
	c.AutoReply.APITimeout = 1500 * time.Millisecond
	c.AutoReply.Sandbox.TasksMax = 1
	err := c.Validate()
	for _, want := range []string{
		`auto_reply.untrusted: "direct" is not allowed (allowed: sandbox, off)`,
		"auto_reply.api_timeout_seconds: 1.5s is out of range",
		"auto_reply.sandbox.tasks_max: 1 is too small (minimum 8)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.Key != "auto_reply.untrusted" || e.File != "" {
		t.Errorf("errors.As(Validate()) = %#v, want the first *Error for auto_reply.untrusted", e)
	}
}

func TestShowRoundTrip(t *testing.T) {
	custom := Default()
	custom.Listen = ""
	custom.KeysFile = "/etc/anet/keys.yaml"
	custom.LogLevel = LogDebug
	custom.AutoReply = AutoReply{
		Backend: BackendOpenAI, Agent: AgentOpencode, Trusted: ModeOff, Untrusted: ModeOff,
		Model: "123", APIBase: "https://llm.example.com/v1", APITimeout: 30 * time.Second,
		WorkDir: "/srv/anet work", WorkRetention: 90 * time.Minute,
		EgressAllow: []string{"pypi.org", "files.pythonhosted.org"},
		Sandbox: SandboxLimits{RunsPerDay: 0, RunsPerPeerPerDay: 0, MemoryMax: 16*MiB + 1, TasksMax: 8, DiskMax: 3 * GiB,
			Isolation: IsolationVM, VMAccel: VMAccelKVMOrTCG},
	}
	for name, c := range map[string]Config{"default": Default(), "custom": custom} {
		t.Run(name, func(t *testing.T) {
			out, err := Show(c)
			if err != nil {
				t.Fatalf("Show() = %v", err)
			}
			back, err := Parse("shown.yaml", out)
			if err != nil || !reflect.DeepEqual(back, c) {
				t.Fatalf("Parse(Show(c)) = %+v, %v, want %+v\n%s", back, err, c, out)
			}
		})
	}
	out, _ := Show(Default())
	for _, line := range []string{"listen: 127.0.0.1:7420", "  work_retention: 168h", "  egress_allow: []", "    memory_max: 2GiB", "    runs_per_day: 20"} {
		if !strings.Contains(string(out), line+"\n") {
			t.Errorf("Show(Default()) lacks line %q:\n%s", line, out)
		}
	}
}

func TestGet(t *testing.T) {
	c := Default()
	c.AutoReply.EgressAllow = []string{"pypi.org", "files.pythonhosted.org"}
	cases := []struct{ key, want string }{
		{"auto_reply.egress_allow", "pypi.org,files.pythonhosted.org"},
		{"auto_reply.sandbox", "runs_per_day: 20\nruns_per_peer_per_day: 5\nspend_per_day: \"5.00\"\nspend_per_peer_per_day: \"1.00\"\nmemory_max: 2GiB\ntasks_max: 256\ndisk_max: 2GiB\nisolation: bwrap\nvm_accel: kvm\n"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if got, err := Get(c, tc.key); err != nil || got != tc.want {
				t.Fatalf("Get(%s) = %q, %v, want %q", tc.key, got, err, tc.want)
			}
		})
	}
	for key, want := range map[string]string{
		"auto_reply.trustd":      `unknown key "auto_reply.trustd" (known: backend, agent,`,
		"nope":                   `unknown key "nope" (known: listen, keys_file, log_level, auto_reply, intake, dashboard)`,
		"listen.port":            `unknown key "listen.port"`,
		"auto_reply.sandbox.x.y": `unknown key "auto_reply.sandbox.x"`,
	} {
		t.Run("unknown "+key, func(t *testing.T) {
			_, err := Get(c, key)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Get(%s) = %v, want %q", key, err, want)
			}
		})
	}
}

// TestIsolationValues: the tier and the vm accelerator policy are closed sets, and an unknown
// value names the key (V1).
func TestIsolationValues(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"auto_reply:\n  sandbox:\n    isolation: firecracker\n", `auto_reply.sandbox.isolation: "firecracker" is not allowed (allowed: bwrap, vm)`},
		{"auto_reply:\n  sandbox:\n    vm_accel: tcg\n", `auto_reply.sandbox.vm_accel: "tcg" is not allowed (allowed: kvm, kvm_or_tcg)`},
	} {
		if got := parseErr(t, c.src); !strings.Contains(got, c.want) {
			t.Errorf("Parse(%q) = %q, want it to contain %q", c.src, got, c.want)
		}
	}
	c, err := Parse("config.yaml", []byte("auto_reply:\n  sandbox:\n    isolation: vm\n    vm_accel: kvm_or_tcg\n"))
	if err != nil || c.AutoReply.Sandbox.Isolation != IsolationVM || c.AutoReply.Sandbox.VMAccel != VMAccelKVMOrTCG {
		t.Fatalf("Parse(vm, kvm_or_tcg) = %+v, %v", c.AutoReply.Sandbox, err)
	}
}
