package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
)

// The real agent CLIs come from .ci/npm-agents.sh, installed into one prefix that every user
// can read. ANET_TEST_AGENTS_DIR overrides the prefix (the harness passes ANET_* through to
// the unprivileged side).
const (
	agentsDirEnv     = "ANET_TEST_AGENTS_DIR"
	defaultAgentsDir = "/opt/anet-test-agents"
	// realClientsDebugEnv, when set, makes the tests log what the fake saw even when they
	// pass: how pkg/agents' notes on what each CLI sends are kept up to date after a version bump.
	realClientsDebugEnv = "ANET_TEST_REALCLIENTS_DEBUG"
)

// Generous bounds for a loaded 2-core machine: claude is a 370 MB binary and codex starts
// through node; each normally answers within seconds. These are waits, never assertions.
const (
	endpointStartWait = 30 * time.Second
	agentRunTimeout   = 45 * time.Second
	agentWait         = 60 * time.Second
)

// agentBin returns the installed CLI name from the agents prefix, failing loudly (never
// skipping) when it is missing.
func agentBin(t *testing.T, name string) (prefix, bin string) {
	t.Helper()
	prefix = os.Getenv(agentsDirEnv)
	if prefix == "" {
		prefix = defaultAgentsDir
	}
	bin = filepath.Join(prefix, "bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("real %s CLI not found at %s (%v): run .ci/npm-agents.sh as root (or set %s to its prefix)", name, bin, err, agentsDirEnv)
	}
	return prefix, bin
}

// requestFailures starts a check of the fake's recorded requests: fail reports one failure
// (the fake's own problems are reported first), and done logs the fake's view once if any
// failure was reported.
func requestFailures(t *testing.T, problems []string, logFake func()) (fail func(format string, args ...any), done func()) {
	t.Helper()
	failed := false
	fail = func(format string, args ...any) {
		t.Helper()
		failed = true
		t.Errorf(format, args...)
	}
	for _, p := range problems {
		fail("fake upstream: %s", p)
	}
	return fail, func() {
		if failed {
			logFake()
		}
	}
}

// shortTempDir is a temp dir with a short path: unix socket paths are limited to 108 bytes,
// and t.TempDir() names grow with the test name.
func shortTempDir(t *testing.T, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// egressEndpoint is a running test-built `anet-egress endpoint`.
type egressEndpoint struct {
	Socket      string
	Placeholder string
	Stderr      *syncBuffer
}

// startEgressEndpoint runs `anet-egress-test endpoint` with policy and keys, redirecting
// host:443 to the fake upstream after every rule, and trusting the test CA through
// SSL_CERT_FILE (the endpoint's process only; the sandbox never gets it).
func startEgressEndpoint(t *testing.T, dir, policy, keysYAML, redirect, caPEM string) *egressEndpoint {
	t.Helper()
	pol := filepath.Join(dir, "policy.json")
	keysFile := filepath.Join(dir, "keys.yaml")
	caFile := filepath.Join(dir, "test-ca.pem")
	for _, f := range []struct{ path, data string }{{pol, policy}, {keysFile, keysYAML}, {caFile, caPEM}} {
		if err := os.WriteFile(f.path, []byte(f.data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "ep", "s")
	cmd := exec.Command(testharness.Bin(t, "anet-egress-test"), "endpoint", "--policy", pol, "--socket", sock, "--keys", keysFile)
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME"),
		"SSL_CERT_FILE=" + caFile,
		"ANET_TEST_REDIRECTS=" + redirect,
	}
	ep := &egressEndpoint{Socket: sock, Stderr: &syncBuffer{}}
	cmd.Stderr = ep.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start anet-egress-test endpoint: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(endpointStartWait):
		t.Fatalf("anet-egress-test endpoint printed nothing within %v (stderr: %s)", endpointStartWait, ep.Stderr)
	}
	var info struct{ Socket, Placeholder string }
	if err := json.Unmarshal([]byte(line), &info); err != nil || info.Socket != sock || info.Placeholder == "" {
		t.Fatalf("anet-egress-test endpoint stdout = %q (%v), want {\"socket\":%q,\"placeholder\":…}; stderr: %s", line, err, sock, ep.Stderr)
	}
	ep.Placeholder = info.Placeholder
	return ep
}

// sandboxRun is what one `anet-sandboxd exec` run produced.
type sandboxRun struct {
	Stdout, Stderr string
	ExitCode       int
	Outcome        string
	Elapsed        time.Duration
}

// runInSandbox runs argv with `anet-sandboxd exec` in exactly a run's sandbox: the endpoint
// socket relayed to 127.0.0.1:port inside, env handed in, the agent tree bound read-only.
func runInSandbox(t *testing.T, dir string, ep *egressEndpoint, port int, agentTree, work string, env []string, argv ...string) sandboxRun {
	t.Helper()
	runRoot := filepath.Join(dir, "runs")
	outcome := filepath.Join(dir, "outcome.json")
	args := []string{"exec",
		"--endpoint", ep.Socket, "--port", fmt.Sprint(port),
		"--agent-tree", agentTree, "--work", work, "--run-root", runRoot,
		"--timeout", agentRunTimeout.String(), "--outcome", outcome,
	}
	for _, kv := range env {
		args = append(args, "--env", kv)
	}
	args = append(append(args, "--"), argv...)
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, testharness.Bin(t, "anet-sandboxd"), args...)
	// sandboxd itself gets only what locates the node's dirs (it hides them from the run).
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=" + os.Getenv("HOME"), "XDG_RUNTIME_DIR=" + os.Getenv("XDG_RUNTIME_DIR"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := sandboxRun{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
	default:
		t.Fatalf("anet-sandboxd exec: %v (stderr: %s)", err, r.Stderr)
	}
	if ctx.Err() != nil {
		t.Fatalf("anet-sandboxd exec did not end within %v; stdout: %s; stderr: %s", agentWait, r.Stdout, r.Stderr)
	}
	if b, err := os.ReadFile(outcome); err == nil {
		r.Outcome = strings.TrimSpace(string(b))
	}
	return r
}

// containsSecret reports whether s appears in a recorded request's headers or body.
func containsSecret(h map[string][]string, body []byte, s string) bool {
	for k, vs := range h {
		if strings.Contains(k, s) {
			return true
		}
		for _, v := range vs {
			if strings.Contains(v, s) {
				return true
			}
		}
	}
	return bytes.Contains(body, []byte(s))
}

// jsonInt reads a JSON number field decoded with UseNumber.
func jsonInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func decodeBody(body []byte) (map[string]any, error) {
	var o map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&o); err != nil {
		return nil, err
	}
	return o, nil
}

// randomHex is n random bytes in hex: per-test keys that cannot collide with anything else.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
