package doctor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// ProbeOf decodes the probe answer carried in a DoctorView (the running anet-sandboxd's, or
// `anet-sandboxd probe --json` run as anetd runs it).
func ProbeOf(v control.DoctorView) (*sandbox.ProbeResult, error) {
	if v.ProbeError != "" {
		return nil, fmt.Errorf("%s", v.ProbeError)
	}
	var p sandbox.ProbeResult
	if err := json.Unmarshal(v.Probe, &p); err != nil {
		return nil, fmt.Errorf("the sandbox probe's answer: %w", err)
	}
	return &p, nil
}

// Setup is what the node checks need besides what anetd and its helpers said.
type Setup struct {
	Config config.Config
	Paths  config.Paths
	// AgentBinary and AgentInstall name the configured agent's program and how to get it.
	AgentBinary, AgentInstall string
	// AgentVersion asks the agent's program for its version ("" when it does not say).
	AgentVersion func(path string) string
	// BwrapOnPATH is where the operator's own PATH finds bwrap ("" when it does not).
	BwrapOnPATH string
	// LimitsFix is the command that gives this user memory and task limits on this host.
	LimitsFix string
	// FreeBytes reports the free space of the file system holding a path.
	FreeBytes func(path string) (int64, error)
}

// NodeChecks turns what anetd and its helpers see (v, from GET /v1/doctor, or gathered the
// way anetd would with no anetd running) into checks: the sandbox probe as anet-sandboxd
// answers it (probe.NAME), then the node's (node.NAME): its limits, the agent program anetd
// would start, the key for its provider, the model a run would be pinned to, and the free
// space of the work roots. Each failure names its fix.
func NodeChecks(v control.DoctorView, s Setup) []check.Check {
	p, err := ProbeOf(v)
	out := ProbeChecks(p, err)
	for i := range out {
		if !out[i].OK {
			out[i] = probeFix(out[i], s)
		}
	}
	var node []check.Check
	if p != nil && p.OK { // a failed probe says nothing about the limits
		node = append(node, limitsCheck(p, s))
	}
	if s.Config.AutoReply.Backend == config.BackendExec {
		node = append(node, agentCheck(v, s))
	} else {
		node = append(node, check.Pass("agent", "", "the openai back-end starts no agent program"))
	}
	node = append(node, keyCheck(v, s), modelCheck(v, s))
	node = append(node, diskChecks(s)...)
	return append(out, check.Prefixed("node", node)...)
}

// probeFix says what the failure of a probe check means on this node and how to fix it.
func probeFix(c check.Check, s Setup) check.Check {
	c.Detail = reasons.Dedup(c.Code, c.Detail)
	switch c.Code {
	case reasons.NoBwrap:
		c.Detail, c.Fix = "", "sudo apt-get install bubblewrap"
		if s.BwrapOnPATH != "" && !slices.Contains(filepath.SplitList(helperpath.PATH), filepath.Dir(s.BwrapOnPATH)) {
			c.Detail = "your PATH has it at " + s.BwrapOnPATH + ", where the helpers do not look"
			c.Fix = "sudo apt-get install bubblewrap (or: sudo ln -s " + s.BwrapOnPATH + " /usr/local/bin/bwrap)"
		}
	case reasons.UsernsBlocked:
		c.Fix = InstallCommand
	case reasons.UsernsUnavailable:
		c.Fix = "sudo sysctl kernel.unprivileged_userns_clone=1 (or run the node where user namespaces are allowed)"
	case "":
		// The probe could not run at all (anet-sandboxd missing or not answering).
		c.Fix = "anet status shows anet-sandboxd; restart anetd if it stays down"
	default:
		c.Fix = "anet-sandboxd probe --json shows each check; or set auto_reply.untrusted to off until it passes"
	}
	return c
}

// limitsCheck says whether runs get their cgroup limits (S6), by which mechanism, where (the
// delegated subtree, the manager) and why no better one was taken (F2: the precise reason).
func limitsCheck(p *sandbox.ProbeResult, s Setup) check.Check {
	if p.Limits == sandbox.CgroupFull {
		how := "each run gets its own cgroup"
		if p.Mechanism != "" {
			how = p.Mechanism + ": " + how
		}
		detail := "full, " + how + " with memory_max and tasks_max"
		if p.MechanismDetail != "" {
			detail += " (" + p.MechanismDetail + ")"
		}
		return check.Pass("limits", "S6", detail)
	}
	// Degraded, not failed: every other limit still holds (S6).
	return check.Check{Name: "limits", Requirement: "S6", OK: true, Code: reasons.NoCgroupLimits, Detail: p.MechanismDetail, Fix: s.LimitsFix}
}

func agentCheck(v control.DoctorView, s Setup) check.Check {
	agent := string(s.Config.AutoReply.Agent)
	if v.AgentError != "" || v.AgentPath == "" {
		c := check.Fail("agent", "", reasons.AgentMissing, fmt.Sprintf("%s (%s): %s", agent, s.AgentBinary, v.AgentError))
		c.Fix = s.AgentInstall
		return c
	}
	if v.AgentRuntimeError != "" {
		// The interpreter a turn would refuse fails here too: a passing --version run
		// outside the sandbox says nothing about the run (E10).
		c := check.Fail("agent", "E10", v.AgentRuntimeCode, fmt.Sprintf("%s at %s: %s", agent, v.AgentPath, v.AgentRuntimeError))
		c.Fix = "install the runtime it needs and point the node at it: anet autoreply set agent_runtime /path/to/node"
		return c
	}
	if v.AgentSandboxError != "" {
		// The agent answers on the host but not where a stranger's turn runs (S8).
		c := check.Fail("agent", "S8", v.AgentSandboxCode, fmt.Sprintf("%s at %s: %s", agent, v.AgentPath, v.AgentSandboxError))
		c.Fix = agentSandboxFix(v.AgentSandboxCode, s.AgentInstall)
		return c
	}
	d := agent + " at " + v.AgentPath
	switch {
	case v.AgentSandbox != "":
		d += " (in the sandbox: " + v.AgentSandbox + ")"
	case s.AgentVersion != nil:
		// No sandbox answered (the probe failed, and says why): the host's answer only.
		if ver := s.AgentVersion(v.AgentPath); ver != "" {
			d += " (" + ver + ")"
		}
	}
	if v.AgentRuntime != "" {
		d += ", runtime " + v.AgentRuntime
	}
	return check.Pass("agent", "", d)
}

// agentSandboxFix is what to do about an agent that does not answer in the sandbox.
func agentSandboxFix(code reasons.Code, install string) string {
	switch code {
	case reasons.AgentRuntimeTooOld:
		return "install the runtime it needs and point the node at it: anet autoreply set agent_runtime /path/to/node"
	case reasons.AgentFailsInSandbox:
		// A run sees the system's dirs and the agent's own tree only (S3): what the agent
		// loads from elsewhere (a library, a helper in the operator's home) is not there.
		return "reinstall the agent so that all of it is in its own directory (" + install + "), then run anet doctor again; anet autoreply test shows a whole turn"
	}
	// The sandbox itself did not run it: its own reason, which anet status shows too.
	return "see the probe's checks above and anet status; then run anet doctor again"
}

// provider is the keys file's entry the configured back-end and agent use.
func provider(a config.AutoReply) string {
	var up upstream.Upstream
	var err error
	if a.Backend == config.BackendOpenAI {
		up, err = upstream.ForCompletion(a.APIBase)
	} else {
		up, err = upstream.For(string(a.Agent), a.APIBase)
	}
	if err != nil {
		return ""
	}
	return up.KeyProvider
}

func keyCheck(v control.DoctorView, s Setup) check.Check {
	if !v.Keys.OK {
		c := check.Fail("key", "F3", v.Keys.Code, reasons.Dedup(v.Keys.Code, v.Keys.Message))
		c.Fix = "fix the keys file, then anet reload"
		return c
	}
	p := provider(s.Config.AutoReply)
	switch {
	case p == "":
		return check.Pass("key", "F3", "this agent needs no key from the keys file")
	case slices.Contains(v.Keys.Providers, p):
		return check.Pass("key", "F3", "the keys file has a key for "+p+" (anet-egress says so; it never shows the key)")
	}
	c := check.Fail("key", "F3", reasons.NoAPIKey, "the keys file has no key for "+p)
	c.Fix = fmt.Sprintf("add the line `%s: KEY` to %s (mode 0600), then anet reload", p, s.Paths.KeysFile)
	return c
}

func modelCheck(v control.DoctorView, s Setup) check.Check {
	if v.Run == nil {
		c := check.Fail("model", "E2", reasons.HelperDown, "anet-egress did not answer")
		c.Fix = "anet status shows anet-egress"
		return c
	}
	if v.Run.OK {
		return check.Pass("model", "E2", "a run is pinned to "+v.Run.Model)
	}
	c := check.Fail("model", "E2", v.Run.Code, reasons.Dedup(v.Run.Code, v.Run.Message))
	switch v.Run.Code {
	case reasons.NoAPIBase, "api_base_invalid", "api_base_refused":
		c.Fix = "anet autoreply set api_base https://HOST/v1 (or choose another agent)"
	case reasons.NoModel:
		c.Fix = "anet autoreply set model MODEL"
	case reasons.NoAPIKey:
		c.Fix = "add the provider's key to " + s.Paths.KeysFile + ", then anet reload"
	case reasons.AgentUnsupported:
		c.Fix = "anet autoreply set agent claude (or another agent that runs in the sandbox)"
	default:
		c.Fix = "anet autoreply set model MODEL with a model the upstream knows"
	}
	return c
}

// WorkDiskLow: a work root's file system has less room than one run may use.
const WorkDiskLow reasons.Code = "work_disk_low"

func init() {
	reasons.Register(reasons.Entry{Code: WorkDiskLow, Kind: reasons.KindWarning,
		Text: "a work root's file system has less free space than one run may use (auto_reply.sandbox.disk_max)", Requirement: "S6"})
}

// diskChecks compare the free space of each work root's file system with disk_max, what one
// run may use (S6): work (a trusted peer's direct runs) and sandbox_work (sandboxed runs).
func diskChecks(s Setup) []check.Check {
	if s.FreeBytes == nil {
		return nil
	}
	var out []check.Check
	need := s.Config.AutoReply.Sandbox.DiskMax
	for _, root := range []struct{ name, path string }{
		{"sandbox_work", s.Paths.SandboxWorkRoot()},
		{"work", s.Paths.WorkRoot(s.Config)},
	} {
		free, err := s.FreeBytes(existingParent(root.path))
		switch {
		case err != nil:
			out = append(out, check.Fail(root.name, "S6", reasons.Internal, root.path+": "+err.Error()))
		case free < need:
			// Degraded: a run fails only if it comes to need the room.
			out = append(out, check.Check{Name: root.name, Requirement: "S6", OK: true, Code: WorkDiskLow,
				Detail: fmt.Sprintf("%s: %s free; a run may use %s (disk_max)", root.path, approxBytes(free), limits.Bytes(need)),
				Fix:    "free space there, or lower auto_reply.sandbox.disk_max"})
		default:
			out = append(out, check.Pass(root.name, "S6", root.path+": "+approxBytes(free)+" free"))
		}
	}
	return out
}

// approxBytes is a free-space figure for a person: whole units of the largest that fits.
func approxBytes(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", limits.GiB}, {"MiB", limits.MiB}, {"KiB", limits.KiB}} {
		if n >= u.n {
			return fmt.Sprintf("%d %s", n/u.n, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// existingParent is path or its nearest existing parent (a work root is made at first use).
func existingParent(path string) string {
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
	}
}
