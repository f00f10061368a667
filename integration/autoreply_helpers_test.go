package integration

// Set-up for the auto-reply tests: a node B whose anetd is a test build (it hands
// ANET_TEST_REDIRECTS to its egress helper), whose helper dir holds the test-built
// anet-egress, whose PATH has the test agent as `claude`, and a fake model upstream over real
// TLS (test CA through SSL_CERT_FILE).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// autoreplyBuilds are the extra programs these tests need (see TestMain).
var autoreplyBuilds = []testharness.Build{
	{Name: "anetd-test", Pkg: "./cmd/anetd", Tags: []string{"anettest"}},
	{Name: "anetd-noautoreply", Pkg: "./cmd/anetd", Tags: []string{"noautoreply"}},
	{Name: "anet-noautoreply", Pkg: "./cmd/anet", Tags: []string{"noautoreply"}},
	{Name: "testagent", Pkg: "./integration/testdata/testagent"},
	// O1: anet-sandboxd as a platform without a sandbox backend builds it.
	{Name: "anet-sandboxd-nobackend", Pkg: "./cmd/anet-sandboxd", Tags: []string{"nobackend"}},
	{Name: "anet-demo", Pkg: "./cmd/anet-demo"},
}

const arPinned = "claude-haiku-5-5" // what an empty auto_reply.model pins for claude (E2)

// arFake is the fake model service.
type arFake struct {
	up     *standin.Upstream
	caFile string
	key    string
	ca     *localca.Authority
	// addr, when set, is where api.openai.com goes instead of up (a Responses fake).
	openai string
}

func newARFake(t *testing.T, dir string, pinned string) *arFake {
	t.Helper()
	ca, err := localca.New("api.anthropic.com", "api.openai.com", chatHost)
	if err != nil {
		t.Fatal(err)
	}
	f := &arFake{key: "sk-operator-" + randomHex(t, 12), caFile: filepath.Join(dir, "ca.pem"), ca: ca}
	f.up = standin.NewUpstream(ca, f.key, "unused-"+randomHex(t, 8), pinned)
	t.Cleanup(f.up.Close)
	if err := os.WriteFile(f.caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

type arOptions struct {
	autoReply string // YAML lines of the auto_reply section, indented by two spaces
	keys      string // keys.yaml; "" is the anthropic key
	noBwrap   bool   // anet-sandboxd runs with a PATH that has no bwrap
	sandboxd  string // anet-sandboxd binary; "" is the release build
	bin       string // anetd binary; "" is anetd-test
	agent     string // a real agent program put on PATH under its own name; "" is the test agent as claude
	redirects string // more ANET_TEST_REDIRECTS pairs ("host:443=addr,…")
}

// newARNode makes node B: test-built anetd, helper dir, agent on PATH.
func newARNode(t *testing.T, f *arFake, o arOptions) *testNode {
	t.Helper()
	keys := o.keys
	if keys == "" {
		keys = "anthropic: " + f.key + "\n"
	}
	cfg := fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n%s", freePort(t), o.autoReply)
	openai := f.openai
	if openai == "" {
		openai = f.up.Addr()
	}
	n := newNode(t, nodeOptions{config: cfg, keys: keys, extraEnv: []string{
		"SSL_CERT_FILE=" + f.caFile,
		"ANET_TEST_REDIRECTS=api.anthropic.com:443=" + f.up.Addr() + ",api.openai.com:443=" + openai + redirects(o.redirects),
	}})
	// The test agent is `claude` on anetd's PATH, in a directory of its own (bound read-only
	// into the sandbox as the agent's tree).
	agentDir := n.path("agent")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.agent != "" {
		if err := os.Symlink(o.agent, filepath.Join(agentDir, filepath.Base(o.agent))); err != nil {
			t.Fatal(err)
		}
	} else {
		copyExec(t, testharness.Bin(t, "testagent"), filepath.Join(agentDir, "claude"))
	}
	for i, kv := range n.env {
		if strings.HasPrefix(kv, "PATH=") {
			n.env[i] = "PATH=" + agentDir + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	helpers := n.path("helpers")
	if err := os.MkdirAll(helpers, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testharness.Bin(t, "anet-egress-test"), filepath.Join(helpers, "anet-egress")); err != nil {
		t.Fatal(err)
	}
	sdName := o.sandboxd
	if sdName == "" {
		sdName = "anet-sandboxd"
	}
	sd := testharness.Bin(t, sdName)
	if o.noBwrap {
		// F1 test: the launcher finds no bwrap (as on a host without the package).
		script := fmt.Sprintf("#!/bin/sh\nPATH=%s exec %s \"$@\"\n", n.path("empty"), sd)
		os.MkdirAll(n.path("empty"), 0o755)
		if err := os.WriteFile(filepath.Join(helpers, "anet-sandboxd"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Symlink(sd, filepath.Join(helpers, "anet-sandboxd")); err != nil {
		t.Fatal(err)
	}
	bin := o.bin
	if bin == "" {
		bin = "anetd-test"
	}
	arMu.Lock()
	arMeta[n] = arInfo{bin: bin, helpers: helpers}
	arMu.Unlock()
	return n
}

// arInfo is how an auto-reply test node starts (testNode itself is shared with other tests).
type arInfo struct{ bin, helpers string }

var (
	arMu   sync.Mutex
	arMeta = map[*testNode]arInfo{}
)

func redirects(more string) string {
	if more == "" {
		return ""
	}
	return "," + more
}

func copyExec(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// arStart starts B's anetd with its test binary and helper dir and waits until it is ready.
func (n *testNode) arStart() {
	n.t.Helper()
	arMu.Lock()
	info := arMeta[n]
	arMu.Unlock()
	n.logs = &syncBuffer{}
	n.cmd = exec.Command(testharness.Bin(n.t, info.bin), "--helper-dir", info.helpers)
	n.cmd.Env = n.env
	n.cmd.Stdout, n.cmd.Stderr = n.logs, n.logs
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.done = make(chan error, 1)
	cmd, done, t := n.cmd, n.done, n.t
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			<-done
		}
		if t.Failed() {
			t.Logf("anetd (%s) log:\n%s", info.bin, n.logs.String())
		}
	})
	n.waitReady()
}

// startPair starts B's anetd (arStart) and a fresh requester A that knows B; it returns A,
// A's aid and B's aid.
func startPair(t *testing.T, b *testNode) (a *testNode, aidA, aidB string) {
	t.Helper()
	a = newNode(t, nodeOptions{})
	b.arStart()
	a.start()
	aidB = connect(t, a, b)
	return a, a.status().AID, aidB
}

// connect makes a know b (peer add) and returns b's aid.
func connect(t *testing.T, a, b *testNode) string {
	t.Helper()
	sb := b.status()
	a.mustAnet("peer", "add", sb.AID, sb.ListenAddr)
	return sb.AID
}

func send(t *testing.T, from *testNode, to, text string) string {
	t.Helper()
	return strings.TrimSpace(from.mustAnet("send", "--to", to, text))
}

// answerAt waits until the requester has the answer to id and returns it.
func answerAt(t *testing.T, n *testNode, id string) control.Answer {
	t.Helper()
	testkit.WaitFor(t, "answer to "+id, func() bool {
		l := n.show(id)
		return len(l) == 1 && l[0].Answer != nil
	})
	return *n.show(id)[0].Answer
}

// evidence returns the node's chain entries of kind.
func evidence(t *testing.T, n *testNode, kind string) []control.EvidenceEntry {
	t.Helper()
	var out []control.EvidenceEntry
	if err := json.Unmarshal([]byte(n.mustAnet("evidence", "show", "--kind", kind, "--json")), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func details(t *testing.T, e control.EvidenceEntry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Details, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
