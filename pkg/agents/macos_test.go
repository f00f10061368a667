package agents

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// M1, S5: the settings of a sandboxed agent on macOS. Seatbelt runs share the host's
// loopback and see host paths, so: the base URL and the proxy URL point at anet-egress's
// port; the proxy URL carries the placeholder as its password (the loopback endpoint refuses
// a CONNECT without it) and the model traffic bypasses the proxy; every path the agent is
// given lies in the run's own home, tmp or work dir, none in the fixed Linux paths or the
// host's /tmp; Claude Code's scratch dir is the run's tmp; and Claude Code's and Codex's own
// sandboxes stay off (a Seatbelt profile cannot be nested: sandbox_apply fails).
func TestMacOSSettingsM1(t *testing.T) {
	abs := regexp.MustCompile(`(^|[="' ])(/[A-Za-z0-9._/-]+)`)
	for _, a := range sandboxAgents {
		t.Run(string(a), func(t *testing.T) {
			p := macOSParams(a)
			l := mustFor(t, p)
			if err := sandbox.ValidateEnv(l.EnvList(), p.Port); err != nil {
				t.Fatalf("the launcher refuses the macOS env: %v", err)
			}
			for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
				u, err := url.Parse(l.Env[k])
				if err != nil || u.Host != "127.0.0.1:49733" || u.User == nil {
					t.Fatalf("%s = %q, want a proxy URL on 127.0.0.1:49733 with credentials", k, l.Env[k])
				}
				if pw, _ := u.User.Password(); pw != testPlaceholder {
					t.Errorf("%s carries password %q, want the run's placeholder", k, pw)
				}
			}
			for _, k := range []string{"NO_PROXY", "no_proxy"} {
				if !strings.Contains(l.Env[k], "127.0.0.1") {
					t.Errorf("%s = %q: the model requests to the endpoint would go through the proxy", k, l.Env[k])
				}
			}
			var texts []string
			texts = append(texts, l.Argv...)
			for k, v := range l.Env {
				texts = append(texts, k+"="+v)
			}
			texts = append(texts, fileContents(l)...)
			for _, s := range texts {
				for _, m := range abs.FindAllStringSubmatch(s, -1) {
					path := m[2]
					if !sandbox.Within(path, p.Home) && !sandbox.Within(path, p.Tmp) && !sandbox.Within(path, p.Work) && path != "/v1" {
						t.Errorf("For(%s) on macOS names %q, outside the run's home, tmp and work dir", a, path)
					}
				}
				if strings.Contains(s, "127.0.0.1:") && !strings.Contains(s, "127.0.0.1:49733") {
					t.Errorf("For(%s) on macOS points at another loopback port: %q", a, s)
				}
			}
		})
	}
	t.Run("claude", func(t *testing.T) {
		l := mustFor(t, macOSParams(Claude))
		if got := l.Env["CLAUDE_CODE_TMPDIR"]; got != "/Users/op/.cache/anet/runs/r1/tmp" {
			t.Errorf("CLAUDE_CODE_TMPDIR = %q, want the run's tmp", got)
		}
		var doc map[string]any
		if err := json.Unmarshal(fileOf(t, l, ".claude/settings.json"), &doc); err != nil {
			t.Fatal(err)
		}
		runChecks(t, "claude settings", doc, []check{{[]any{"sandbox", "enabled"}, false}})
	})
	t.Run("codex", func(t *testing.T) {
		l := mustFor(t, macOSParams(Codex))
		runChecks(t, "codex config.toml", parseTOML(t, fileOf(t, l, ".codex/config.toml")), []check{
			{[]any{"sandbox_mode"}, "danger-full-access"},
			{[]any{"approval_policy"}, "never"},
			{[]any{"model_providers", "anet", "base_url"}, "http://127.0.0.1:49733/v1"},
		})
	})
	t.Run("linux proxy carries no credentials", func(t *testing.T) {
		// H1, H4: on Linux the endpoint is the run's own socket, so the proxy every tool
		// asks is the endpoint's port with no credentials: none are handed out for it.
		for _, a := range sandboxAgents {
			l := mustFor(t, params(a, true))
			want := "http://127.0.0.1:" + strconv.Itoa(params(a, true).Port)
			for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
				if v := l.Env[k]; v != want {
					t.Errorf("For(%s) on Linux sets %s=%q, want %q", a, k, v, want)
				}
			}
			if v := l.Env["NO_PROXY"]; v != "127.0.0.1,localhost" {
				t.Errorf("For(%s) on Linux sets NO_PROXY=%q, want the endpoint kept direct", a, v)
			}
		}
	})
}

// A path a caller hands in for tmp or work must be clean and absolute, like home.
func TestHostPathParamsValidated(t *testing.T) {
	for _, mut := range []func(*Params){
		func(p *Params) { p.Tmp = "tmp" },
		func(p *Params) { p.Work = "/Users/op/../etc" },
		func(p *Params) { p.Work = `/Users/op/"x` },
	} {
		p := macOSParams(Codex)
		mut(&p)
		if _, err := For(p); err == nil {
			t.Errorf("For(%+v) = nil error, want the bad path refused", p)
		}
	}
}

// ByBinary finds the sandbox agents by their program's name, and not cursor.
func TestByBinary(t *testing.T) {
	if s, ok := ByBinary("codex"); !ok || s.Agent != Codex {
		t.Errorf("ByBinary(codex) = %v, %v", s, ok)
	}
	if _, ok := ByBinary("cursor-agent"); ok {
		t.Error("ByBinary(cursor-agent) found an agent that cannot run in the sandbox")
	}
}
