package autoreply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// AgentInSandbox asks the configured agent for its version in a sandbox built like a turn's
// (S8, E10): its tree and interpreter bound as a turn binds them, the run's PATH and limits,
// no endpoint. What runs on the host can still fail there (a library outside the agent's
// tree, an interpreter the run's PATH does not find), and a turn would fail the same way, so
// doctor asks there: a non-zero exit is agent_fails_in_sandbox; for a script agent the
// interpreter its "#!/usr/bin/env" line finds in the run is asked too, and one outside the
// agent's range is agent_runtime_too_old. It returns the agent's version line and the
// interpreter's version as the run sees it ("" for a native binary). The interpreter is the
// one AgentRuntime found (found), not looked for again. An agent that cannot run in the
// sandbox at all (agent_unsupported) is not asked.
func (e *Engine) AgentInSandbox(ctx context.Context, c config.AutoReply, found RuntimeFound) (agentVersion, runtimeVersion string, err error) {
	spec, ok := agents.Lookup(string(c.Agent))
	if !ok || !spec.Sandbox {
		return "", "", nil
	}
	prog, err := e.AgentProgram(c)
	if err != nil {
		return "", "", err
	}
	rt := found.rt
	run := func(agent string, argv ...string) (string, error) {
		s := sandbox.Spec{
			ID: newRunID() + "-doctor", Mode: sandbox.ModeSandbox, Argv: argv, Agent: agent,
			AgentTree: packageTree(prog), RuntimeTree: rt.Tree, RuntimeBin: rt.Bin,
			// No work root: the run gets a fresh work dir, removed with it.
			RunRoot: e.o.Dirs.RunRoot, Hidden: e.o.Dirs.Hidden,
			Limits: sandbox.Limits{WallClock: runtimeVersionWait, Memory: c.Sandbox.MemoryMax, Tasks: int64(c.Sandbox.TasksMax), Disk: c.Sandbox.DiskMax},
		}
		res, err := sandbox.RunToEnd(ctx, e.o.Sandbox, s)
		if err != nil {
			return "", err
		}
		if o := res.Outcome; o.ExitCode != 0 || o.Limit != "" {
			why := fmt.Sprintf("exit %d", o.ExitCode)
			if o.Limit != "" {
				why += " (" + string(o.Limit) + ")"
			}
			return "", reasons.New(reasons.AgentFailsInSandbox, fmt.Sprintf("%s in the sandbox: %s: %s",
				strings.Join(argv, " "), why, reasons.Clip(sandbox.LastLine(string(res.Stderr)), 200)))
		}
		return firstLine(string(res.Stdout)), nil
	}
	if agentVersion, err = run(string(c.Agent), prog, "--version"); err != nil {
		return "", "", err
	}
	if rt.Program == "" {
		return agentVersion, "", nil
	}
	// The agent's #! line finds its interpreter on the run's PATH, as env does here.
	name := filepath.Base(rt.Program)
	out, err := run("", "/usr/bin/env", name, "--version")
	if err != nil {
		return "", "", err
	}
	v, err := agents.ParseVersion(out)
	if err != nil {
		return "", "", reasons.New(reasons.AgentFailsInSandbox, fmt.Sprintf("%s in the sandbox: %v", name, err))
	}
	if !spec.Runtime.Accepts(v) {
		return "", "", reasons.New(reasons.AgentRuntimeTooOld,
			fmt.Sprintf("in the sandbox the agent's #! line finds %s %s; %s needs %s: install it and set auto_reply.agent_runtime to its %s", name, v, spec.Agent, spec.Runtime.Text, name))
	}
	return agentVersion, v.String(), nil
}

// firstLine is the first non-empty line of s, clipped: a program's answer to --version.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return reasons.Clip(l, 200)
		}
	}
	return ""
}
