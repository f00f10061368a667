package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// doctorJSON is `anet doctor --json`: the shared check shape (pkg/check), whose view the
// node's checks are, and the node's status.
type doctorJSON struct {
	check.Report
	Source    string `json:"source"`
	Limits    string `json:"limits"`
	Mechanism string `json:"mechanism"`
	Node      *struct {
		AID string `json:"aid"`
	} `json:"node"`
}

// group returns the checks whose names start with group and a dot, by the rest of the name.
func (d doctorJSON) group(group string) map[string]check.Check {
	out := map[string]check.Check{}
	for _, c := range d.Checks {
		if name, ok := strings.CutPrefix(c.Name, group+"."); ok {
			out[name] = c
		}
	}
	return out
}

func parseDoctor(t *testing.T, out string) doctorJSON {
	t.Helper()
	var d doctorJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("anet doctor --json: %v\n%s", err, out)
	}
	for _, c := range d.Checks {
		if !c.OK && (c.Code == "" && c.Detail == "" || c.Fix == "") {
			t.Errorf("a failed check without code or detail, or without its fix: %+v", c)
		}
	}
	return d
}

func listFiles(t *testing.T, root string) []string {
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// S8, F2, S7: on a working node anet doctor passes every check and reports the node as its
// running helpers see it: the five-check probe of the running anet-sandboxd, the agent program
// anetd would start (and its version), the key and the model a run is pinned to, the work
// disks and both helpers. A1: --apparmor-profile prints the profile and writes no file.
func TestDoctor(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	b.arStart()
	out, errOut, err := b.anet("doctor", "--json")
	if err != nil {
		t.Fatalf("anet doctor on a working node: %v\n%s%s", err, out, errOut)
	}
	d := parseDoctor(t, out)
	probe, node := d.group("probe"), d.group("node")
	if !d.OK || len(probe) != 5 || !probe["loopback"].OK || len(d.group("host")) != 2 || len(d.group("config")) != 3 ||
		d.Node == nil || d.Node.AID == "" || !strings.Contains(d.Source, "running anetd") {
		t.Fatalf("doctor = %s", out)
	}
	for name, want := range map[string]string{
		"agent":        "(in the sandbox: testagent 1.0",
		"key":          "a key for anthropic",
		"model":        "pinned to " + arPinned,
		"work":         " free",
		"sandbox_work": " free",
		"sandboxd":     "running",
		"egress":       "running",
	} {
		if c := node[name]; !c.OK || !strings.Contains(c.Detail, want) {
			t.Errorf("node.%s = %+v, want ok with %q", name, c, want)
		}
	}
	// S6: the harness delegates a cgroup v1 hierarchy to the node's user: doctor says so.
	if c := node["limits"]; !c.OK || !strings.Contains(c.Detail, "full, cgroup v1 delegated") || d.Mechanism != "cgroup v1 delegated" {
		t.Errorf("node.limits = %+v, mechanism %q, want full by cgroup v1 delegated", c, d.Mechanism)
	}
	text, _, err := b.anet("doctor")
	if err != nil || !strings.Contains(text, "result: ok (") || !strings.Contains(text, "node: the running anetd's helpers") {
		t.Fatalf("anet doctor = %v:\n%s", err, text)
	}

	before := listFiles(t, b.root)
	prof, _, err := b.anet("doctor", "--apparmor-profile")
	if err != nil || !strings.Contains(prof, "profile anet-bwrap /usr/bin/bwrap") || !strings.Contains(prof, "audit deny capability,") {
		t.Fatalf("--apparmor-profile = %v:\n%s", err, prof)
	}
	// What the node itself removes meanwhile (the work dirs of doctor's own sandboxed
	// checks, settled after it answered) is not the printing's doing: only a new path is.
	had := map[string]bool{}
	for _, p := range before {
		had[p] = true
	}
	for _, p := range listFiles(t, b.root) {
		if !had[p] {
			t.Errorf("--apparmor-profile wrote %s", p)
		}
	}
}

// S8, E10: doctor asks the agent where a stranger's turn runs. This agent answers on the
// operator's host, where its licence file lies in the operator's home, but not in a run,
// whose home is its own: doctor fails node.agent with agent_fails_in_sandbox, the agent's
// last words and the fix, where a --version run on the host passed.
func TestDoctorAsksTheAgentInTheSandbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "licensed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "claude")
	body := "#!/bin/sh\n" +
		"if [ ! -r \"$HOME/.agent-licence\" ]; then echo \"licensed-agent: no licence in $HOME\" >&2; exit 3; fi\n" +
		"echo licensed-agent 1.0\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	licence := filepath.Join(home, ".agent-licence")
	if err := os.WriteFile(licence, []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(licence) })
	if out, err := exec.Command(script, "--version").Output(); err != nil || !strings.Contains(string(out), "licensed-agent 1.0") {
		t.Fatalf("the agent does not answer on the host: %v %q", err, out)
	}
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec, agent: script})
	b.arStart()
	out, _, err := b.anet("doctor", "--json")
	if err == nil {
		t.Fatalf("anet doctor passed an agent that cannot run in the sandbox:\n%s", out)
	}
	a := parseDoctor(t, out).group("node")["agent"]
	if a.OK || a.Code != reasons.AgentFailsInSandbox || !strings.Contains(a.Detail, "exit 3") ||
		!strings.Contains(a.Detail, "no licence in /home/agent") || !strings.Contains(a.Fix, "own directory") {
		t.Fatalf("node.agent = %+v, want agent_fails_in_sandbox with the agent's last words and the fix", a)
	}
}

// S8, F1: doctor's verdict is the node's, with or without anetd. Here bwrap is on the
// operator's PATH but anet-sandboxd finds none on its own (a wrapper gives it an empty PATH,
// as a bwrap installed only in ~/bin would be): anetd refuses sandboxed runs, and doctor says
// no_bwrap and where the operator's bwrap is — from the running anetd's helpers, and again
// with anetd stopped, from the helpers run as anetd runs them.
func TestDoctorAgreesWithTheNode(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec, noBwrap: true})
	// The operator's PATH has a bwrap of its own, in a directory the helpers do not search.
	opBin := b.path("opbin")
	if err := os.MkdirAll(opBin, 0o755); err != nil {
		t.Fatal(err)
	}
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bw, filepath.Join(opBin, "bwrap")); err != nil {
		t.Fatal(err)
	}
	for i, kv := range b.env {
		if strings.HasPrefix(kv, "PATH=") {
			b.env[i] = "PATH=" + opBin + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	b.arStart()
	out, _, err := b.anet("doctor", "--json")
	if err == nil {
		t.Fatalf("anet doctor with a sandboxd that finds no bwrap exited 0:\n%s", out)
	}
	running := parseDoctor(t, out)
	for _, h := range running.group("host") {
		if !h.OK {
			t.Errorf("host check %+v failed (the host has bubblewrap)", h)
		}
	}
	sb := running.group("probe")["sandbox"]
	if sb.OK || sb.Code != reasons.NoBwrap || !strings.Contains(sb.Detail, "your PATH has it at "+filepath.Join(opBin, "bwrap")) ||
		!strings.Contains(sb.Fix, "apt-get install bubblewrap") {
		t.Fatalf("probe.sandbox with anetd running = %+v\n%s", sb, out)
	}
	text, _, _ := b.anet("doctor")
	if strings.Count(text, reasons.Text(reasons.NoBwrap)) != 1 || !strings.Contains(text, "fix: ") {
		t.Errorf("anet doctor says the no_bwrap sentence other than once, or no fix:\n%s", text)
	}

	b.stop()
	// anet finds the helpers beside itself (a build tree), as anetd --helper-dir did.
	arMu.Lock()
	helpers := arMeta[b].helpers
	arMu.Unlock()
	anet := filepath.Join(helpers, "anet")
	copyExec(t, testharness.Bin(t, "anet"), anet)
	cmd := exec.Command(anet, "doctor", "--json")
	cmd.Env = b.env
	raw, err := cmd.Output()
	if err == nil {
		t.Fatalf("anet doctor without anetd exited 0:\n%s", raw)
	}
	stopped := parseDoctor(t, string(raw))
	if !strings.Contains(stopped.Source, "anetd is not running") {
		t.Errorf("source = %q", stopped.Source)
	}
	if got := stopped.group("probe")["sandbox"]; got != sb {
		t.Errorf("probe.sandbox without anetd = %+v, with anetd %+v", got, sb)
	}
	for _, name := range []string{"agent", "key", "model"} {
		if got, want := stopped.group("node")[name], running.group("node")[name]; got.OK != want.OK || got.Code != want.Code {
			t.Errorf("node.%s without anetd = %+v, with anetd %+v", name, got, want)
		}
	}
}

// S8: on a fresh node with no agent program and no keys file, doctor names each missing
// piece with its code and the command that fixes it.
func TestDoctorNamesTheFix(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	out, _, err := n.anet("doctor", "--json")
	if err == nil {
		t.Fatalf("anet doctor on a node without agent or key exited 0:\n%s", out)
	}
	d := parseDoctor(t, out)
	node := d.group("node")
	spec, _ := agents.Lookup("claude")
	if c := node["agent"]; c.OK || c.Code != reasons.AgentMissing || c.Fix != spec.Install {
		t.Errorf("node.agent = %+v, want agent_missing fixed by %q", c, spec.Install)
	}
	if c := node["key"]; c.OK || c.Code != reasons.NoAPIKey || !strings.Contains(c.Fix, "anthropic: KEY") || !strings.Contains(c.Fix, "keys.yaml") {
		t.Errorf("node.key = %+v", c)
	}
	if p := d.group("probe"); len(p) != 5 {
		t.Errorf("probe = %v", p)
	}
}
