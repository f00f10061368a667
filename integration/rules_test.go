package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
)

// pathRun is one program run by one path of a rule: what it printed and how it exited.
type pathRun struct {
	name string
	out  string
	code int
}

func runProgram(t *testing.T, name string, env []string, bin string, args ...string) pathRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s: %s %v did not exit:\n%s", name, filepath.Base(bin), args, out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pathRun{name: name, out: out.String(), code: code}
}

// doctorFinding runs `anet doctor --json` and returns the failing configuration finding as
// the CLI would print it: the detail, the fix, and the code on a line of its own.
func doctorFinding(t *testing.T, env []string, args ...string) pathRun {
	t.Helper()
	r := runProgram(t, "anet doctor", env, testharness.Bin(t, "anet"), append(args, "doctor", "--json")...)
	var rep check.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("anet doctor --json: %v\n%s", err, r.out)
	}
	var lines []string
	for _, c := range rep.Checks {
		if !c.OK && strings.HasPrefix(c.Name, "config.") {
			lines = append(lines, c.Detail, "fix: "+c.Fix, "reason: "+string(c.Code))
		}
	}
	return pathRun{name: "anet doctor", out: strings.Join(lines, "\n"), code: r.code}
}

// ruleCase is one rule of the node and one bad input, fed to every path that applies it;
// runs returns each path's run and the rule's words, which every path must print.
type ruleCase struct {
	name string
	code string
	runs func(t *testing.T, n *testNode, env []string) ([]pathRun, string)
}

// One rule, one implementation (C4, F1–F3, H1, E10, E11): each bad input is fed to every path
// that checks it (anetd --check, anetd's start, anet config set, anet doctor and the helper
// that enforces the rule at run time) and each must refuse it with the same reason code and
// the same words. A path that said "valid" where another refused is how the node used to
// start and then fail every run.
func TestOneRuleEveryPath(t *testing.T) {
	for _, rc := range ruleCases() {
		t.Run(rc.name, func(t *testing.T) {
			n := newNode(t, nodeOptions{})
			runs, words := rc.runs(t, n, n.env)
			for _, r := range runs {
				if r.code == 0 {
					t.Errorf("%s accepted the bad input (exit 0):\n%s", r.name, r.out)
					continue
				}
				if !strings.Contains(r.out, words) {
					t.Errorf("%s did not say the rule's words\n  want: %s\n  got:  %s", r.name, words, r.out)
				}
				if !strings.Contains(r.out, "reason: "+rc.code) && !strings.Contains(r.out, `"code":"`+rc.code+`"`) {
					t.Errorf("%s did not give the code %s:\n%s", r.name, rc.code, r.out)
				}
			}
			if len(runs) < 4 {
				t.Fatalf("only %d paths ran; the rule is checked on more", len(runs))
			}
			if _, err := os.Stat(n.path("run", "anet", "control.sock")); err == nil {
				t.Error("an anetd refused at start left a control socket")
			}
		})
	}
}

func ruleCases() []ruleCase {
	anetd := func(t *testing.T, env []string, args ...string) []pathRun {
		bin := testharness.Bin(t, "anetd")
		return []pathRun{
			runProgram(t, "anetd --check", env, bin, append(args, "--check")...),
			runProgram(t, "anetd start", env, bin, args...),
		}
	}
	cli := func(t *testing.T, name string, env []string, args ...string) pathRun {
		return runProgram(t, name, env, testharness.Bin(t, "anet"), args...)
	}
	egress := func(t *testing.T, name string, env []string, args ...string) pathRun {
		return runProgram(t, name, env, testharness.Bin(t, "anet-egress"), args...)
	}
	// endpoint runs anet-egress's endpoint, which serves each run, with a policy, a keys
	// file (keys: its content, or the path of one when it starts with "/"), a socket and
	// the extra flags given.
	endpoint := func(t *testing.T, n *testNode, env []string, policy, keys, sock string, extra ...string) pathRun {
		dir := n.path("ep")
		pf, kf := filepath.Join(dir, "policy.json"), filepath.Join(dir, "ek.yaml")
		writeFile(t, pf, policy, 0o600)
		if strings.HasPrefix(keys, "/") {
			kf = keys
		} else {
			writeFile(t, kf, keys, 0o600)
		}
		if sock == "" {
			sock = filepath.Join(dir, "run", "endpoint.sock")
		}
		return egress(t, "anet-egress endpoint", env, append([]string{"endpoint", "--policy", pf, "--socket", sock, "--keys", kf}, extra...)...)
	}
	return []ruleCase{
		{
			name: "keys file is a symlink",
			code: "keys_file_invalid",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				target := n.path("real-keys.yaml")
				writeFile(t, target, "anthropic: sk-ant-test\n", 0o600)
				link := n.path("config", "anet", "keys.yaml")
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				runs := append(anetd(t, env),
					cli(t, "anet config set keys_file", env, "config", "set", "keys_file", link),
					doctorFinding(t, env),
					egress(t, "anet-egress check", env, "check", "--keys", link),
					endpoint(t, n, env, `{"run_id":"r1","agent":"claude"}`, link, ""),
				)
				return runs, fmt.Sprintf("keys file %s is a symlink (to %s); put the file itself there, or set keys_file to the target", link, target)
			},
		},
		{
			// anet-egress loads the file (at start and on reload); anetd and the CLI learn
			// its verdict from anet-egress check, in the same call as the keys file's.
			name: "models file with an alias to no model",
			code: "models_file_invalid",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				models := n.path("config", "anet", "models.yaml")
				writeFile(t, models, "providers:\n  anthropic:\n    aliases: {quick: claude-nowhere-1}\n", 0o600)
				kf := n.path("ep-keys.yaml")
				writeFile(t, kf, "anthropic: sk-ant-test\n", 0o600)
				runs := append(anetd(t, env),
					doctorFinding(t, env),
					egress(t, "anet-egress check", env, "check", "--keys", kf, "--models", models),
					endpoint(t, n, env, `{"run_id":"r1","agent":"claude"}`, kf, "", "--models", models),
				)
				return runs, fmt.Sprintf(`models file %s: providers.anthropic.aliases.quick: "claude-nowhere-1" is not in models`, models)
			},
		},
		{
			name: "api_base over http to loopback (opencode)",
			code: "api_base_invalid",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				cfg := n.path("config", "anet", "config.yaml")
				writeFile(t, cfg, fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n  agent: opencode\n  api_base: http://127.0.0.1:8080/v1\n", freePort(t)), 0o600)
				runs := anetd(t, env)
				// config set writes the same value into a file that does not have it yet.
				writeFile(t, cfg, "auto_reply:\n  agent: opencode\n", 0o600)
				runs = append(runs, cli(t, "anet config set auto_reply.api_base", env, "config", "set", "auto_reply.api_base", "http://127.0.0.1:8080/v1"))
				writeFile(t, cfg, "auto_reply:\n  agent: opencode\n  api_base: http://127.0.0.1:8080/v1\n", 0o600)
				runs = append(runs, doctorFinding(t, env),
					endpoint(t, n, env, `{"run_id":"r1","agent":"opencode","api_base":"http://127.0.0.1:8080/v1","model":"m"}`, "custom: k\n", ""))
				return runs, "auto_reply.api_base must be an https URL with a host name and no user, query or fragment (the key is sent there) (must be an absolute https URL such as https://host/v1)"
			},
		},
		{
			name: "egress allow-list entry on the local network",
			code: "egress_allow_entry_refused",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				cfg := n.path("config", "anet", "config.yaml")
				writeFile(t, cfg, fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n  egress_allow: [printer.local]\n", freePort(t)), 0o600)
				runs := anetd(t, env)
				runs = append(runs, doctorFinding(t, env))
				writeFile(t, cfg, "auto_reply:\n  egress_allow: []\n", 0o600)
				runs = append(runs,
					cli(t, "anet config set auto_reply.egress_allow", env, "config", "set", "auto_reply.egress_allow", "printer.local"),
					cli(t, "anet autoreply set --egress-allow", env, "autoreply", "set", "--egress-allow", "printer.local"),
					endpoint(t, n, env, `{"run_id":"r1","agent":"claude","allow":["printer.local"]}`, "anthropic: k\n", ""))
				return runs, `entry "printer.local": names ending in .local are on the local network and not allowed (H2)`
			},
		},
		{
			name: "config file writable by others",
			code: "config_file_exposed",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				cfg := n.path("config", "anet", "config.yaml")
				if err := os.Chmod(cfg, 0o666); err != nil {
					t.Fatal(err)
				}
				return append(anetd(t, env),
					cli(t, "anet config set", env, "config", "set", "log_level", "debug"),
					cli(t, "anet config show", env, "config", "show"),
					doctorFinding(t, env)), fmt.Sprintf("config file %s is writable by other users (mode 0666)", cfg)
			},
		},
		{
			name: "explicit config file that does not exist",
			code: "config_missing",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				missing := n.path("nonexistent", "config.yaml")
				return append(anetd(t, env, "--config", missing),
					cli(t, "anet config set", env, "--config", missing, "config", "set", "log_level", "debug"),
					cli(t, "anet config get", env, "--config", missing, "config", "get", "listen"),
					doctorFinding(t, env, "--config", missing)), fmt.Sprintf("config file %s does not exist", missing)
			},
		},
		{
			name: "run socket path too long",
			code: "socket_path_too_long",
			runs: func(t *testing.T, n *testNode, env []string) ([]pathRun, string) {
				// 60 characters of runtime dir: the control socket fits, a run's does not.
				long := n.path("rt" + strings.Repeat("x", 60-len(n.path("rt"))))
				if err := os.MkdirAll(long, 0o700); err != nil {
					t.Fatal(err)
				}
				env = setEnv(env, "XDG_RUNTIME_DIR", long)
				runs := anetd(t, env)
				runs = append(runs, doctorFinding(t, env))
				// The endpoint anetd would ask for, at the path it would have.
				sock := filepath.Join(long, "anet", "runs", config.SampleRunID, config.RunSocketName)
				return append(runs, endpoint(t, n, env, `{"run_id":"r1","agent":"claude"}`, "anthropic: k\n", sock)),
					fmt.Sprintf("run endpoint socket %s is %d bytes; unix sockets allow at most 107", sock, len(sock))
			},
		},
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
