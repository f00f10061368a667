package autoreply

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// versionOf runs "PROGRAM --version" and returns what it printed on stdout.
type versionOf func(ctx context.Context, program string) ([]byte, error)

// agentRuntime is the interpreter a script agent runs with, as the node resolved it on the
// host (E10): the program, its version, and what the sandbox must add so that the agent's
// "#!/usr/bin/env node" finds exactly it (Spec.RuntimeTree and RuntimeBin; both "" when
// the sandbox's own PATH already finds it).
type agentRuntime struct {
	Program, Version string
	Tree, Bin        string
}

// runtimeVersionWait bounds `<interpreter> --version`; a wait, not an assertion.
const runtimeVersionWait = 10 * time.Second

// shebang returns the interpreter a script names in its "#!" line: "/usr/bin/env node" is
// "node" by name (looked up on PATH), "#!/abs/node" the path. A program without one (a
// native binary) returns "", "".
func shebang(prog string) (name, path string, err error) {
	f, err := os.Open(prog)
	if err != nil {
		// Not this check's to report: the launcher resolves the program again and fails
		// the run with its own error (a program that is gone or unreadable).
		return "", "", nil
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" || !strings.HasPrefix(line, "#!") {
		return "", "", nil
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	switch {
	case len(fields) == 0:
		return "", "", fmt.Errorf("agent program %s: empty #! line", prog)
	case filepath.Base(fields[0]) == "env":
		for _, a := range fields[1:] {
			if !strings.HasPrefix(a, "-") {
				return a, "", nil
			}
		}
		return "", "", fmt.Errorf("agent program %s: #! env names no program", prog)
	}
	return filepath.Base(fields[0]), fields[0], nil
}

// resolveRuntime finds the interpreter of the agent program prog (a host path): the
// configured one (auto_reply.agent_runtime) or the one its "#!" line names, on lookPath
// (anetd's PATH). It asks version for `--version` and refuses one outside the agent's
// supported range with agent_runtime_too_old, before any run. A native binary, or an agent the
// table gives no runtime, needs nothing.
func resolveRuntime(ctx context.Context, spec agents.Spec, prog, configured string, lookPath func(string) (string, error), version versionOf) (agentRuntime, error) {
	if spec.Runtime.Program == "" {
		return agentRuntime{}, nil
	}
	name, abs, err := shebang(prog)
	if err != nil || name != spec.Runtime.Program {
		// A native binary, or a wrapper in another language (a shell script that starts
		// the agent): not the interpreter the table speaks of, and nothing to check.
		return agentRuntime{}, err
	}
	interp := configured
	switch {
	case interp != "":
		if filepath.Base(interp) != name {
			return agentRuntime{}, fmt.Errorf("auto_reply.agent_runtime %s: the agent's #! line asks for %q; name a program called %s", interp, name, name)
		}
	case abs != "":
		interp = abs
	default:
		if interp, err = lookPath(name); err != nil {
			return agentRuntime{}, fmt.Errorf("agent runtime %s (from %s's #! line): %w; install %s or set auto_reply.agent_runtime", name, prog, err, spec.Runtime.Text)
		}
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return agentRuntime{}, fmt.Errorf("agent runtime %s: %w", interp, err)
	}
	if filepath.Base(real) != name {
		// A link named node to a binary called otherwise: the sandbox's PATH holds the
		// binary's own directory, where `env node` would not find it.
		return agentRuntime{}, fmt.Errorf("agent runtime %s resolves to %s, not a program called %s", interp, real, name)
	}
	rt := agentRuntime{Program: real}
	out, err := version(ctx, real)
	if err != nil {
		return agentRuntime{}, fmt.Errorf("agent runtime %s --version: %w", real, err)
	}
	v, err := agents.ParseVersion(string(out))
	if err != nil {
		return agentRuntime{}, fmt.Errorf("agent runtime %s: %w", real, err)
	}
	rt.Version = v.String()
	if !spec.Runtime.Accepts(v) {
		return agentRuntime{}, reasons.New(reasons.AgentRuntimeTooOld,
			fmt.Sprintf("%s is %s; %s needs %s: install it and set auto_reply.agent_runtime to its %s", real, v, spec.Agent, spec.Runtime.Text, name))
	}
	dir := filepath.Dir(real)
	if slices.Contains(filepath.SplitList(sandbox.SandboxPATH), dir) {
		return rt, nil // the sandbox's own PATH has it
	}
	rt.Bin, rt.Tree = dir, dir
	if filepath.Base(dir) == "bin" {
		// A prefix (bin/node beside lib/, include/): the whole installation, read-only.
		rt.Tree = filepath.Dir(dir)
	}
	return rt, nil
}

// RuntimeFound is the interpreter of c's agent as a turn resolved and checked it: Program and
// Version ("" for an agent that needs none), and what the sandbox binds for it, which
// AgentInSandbox uses as it is.
type RuntimeFound struct {
	Program, Version string
	rt               agentRuntime
}

// AgentRuntime is the interpreter a sandboxed run of c's agent would start with, and its
// version, as a turn resolves and checks it (anet doctor, E10). The error carries
// agent_runtime_too_old for one the agent refuses.
func (e *Engine) AgentRuntime(ctx context.Context, c config.AutoReply) (RuntimeFound, error) {
	spec, ok := agents.Lookup(string(c.Agent))
	if !ok {
		return RuntimeFound{}, fmt.Errorf("unknown agent %q", c.Agent)
	}
	prog, err := e.AgentProgram(c)
	if err != nil {
		return RuntimeFound{}, err
	}
	rt, err := resolveRuntime(ctx, spec, prog, c.AgentRuntime, e.o.LookPath, e.runtimeVersion(c))
	return RuntimeFound{Program: rt.Program, Version: rt.Version, rt: rt}, err
}

// runtimeVersion asks anet-sandboxd to run the interpreter's --version as a direct run: anetd
// starts no program but its helpers (docs/architecture.md rule 1), and the launcher's limits
// bound it like any run.
func (e *Engine) runtimeVersion(c config.AutoReply) versionOf {
	return func(ctx context.Context, program string) ([]byte, error) {
		spec := sandbox.Spec{
			ID: newRunID() + "-runtime", Mode: sandbox.ModeDirect, RunRoot: e.o.Dirs.RunRoot,
			// A direct run needs a work dir; one of its own, beside the peers' (named by
			// aid, which this name can never be), reused by every check.
			WorkRoot: e.current().DirectWork, WorkSub: "runtime-check",
			Argv:   []string{program, "--version"},
			Limits: sandbox.Limits{WallClock: runtimeVersionWait, Memory: c.Sandbox.MemoryMax, Tasks: int64(c.Sandbox.TasksMax), Disk: c.Sandbox.DiskMax},
		}
		res, err := sandbox.RunToEnd(ctx, e.o.Sandbox, spec)
		if err != nil {
			return nil, err
		}
		if res.Outcome.ExitCode != 0 || res.Outcome.Limit != "" {
			return nil, fmt.Errorf("exit %d %s: %s", res.Outcome.ExitCode, res.Outcome.Limit, reasons.Clip(strings.TrimSpace(string(res.Stderr)), 200))
		}
		return res.Stdout, nil
	}
}

// RuntimeCode is the code of an AgentRuntime error (agent_missing when it has none of its
// own: the node cannot find the interpreter).
func RuntimeCode(err error) reasons.Code { return runtimeCode(err) }

// runtimeCode is the code of a runtime problem: its own, or agent_missing for one the node
// cannot resolve (the node is not set up to run this agent).
func runtimeCode(err error) reasons.Code {
	var re *reasons.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return AgentMissing
}
