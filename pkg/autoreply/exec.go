package autoreply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/agents"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// SandboxPort is the loopback port inside every sandbox where init relays to the run's
// endpoint. Each run has its own network namespace, so one fixed port serves all.
const SandboxPort = 8080

// execTurn runs the configured agent for t: in the sandbox (route sandbox) or as the
// operator (route direct), with the settings the turn started with. started is called right
// before the agent starts. A sandboxed run's endpoint holds it to allowance (K2; nil: no
// allowance).
func (e *Engine) execTurn(ctx context.Context, log *slog.Logger, run string, t peer.Task, route Route, set *Settings, allowance *money.Micros, started func(), tr *tracer) outcome {
	c := set.Config
	sandboxed := route == RouteSandbox
	stage := "agent"
	fail := func(code reasons.Code, detail string) outcome {
		tr.fail(stage, code, detail)
		return outcome{refusal: reasons.SandboxUnavailable, code: code, detail: detail}
	}
	spec, ok := agents.Lookup(string(c.Agent))
	if !ok || (sandboxed && !spec.Sandbox) {
		return fail(reasons.AgentUnsupported, "agent "+string(c.Agent))
	}
	prog, err := e.AgentProgram(c)
	if err != nil {
		detail := fmt.Sprintf("%v (install: %s)", err, spec.Install)
		if sandboxed {
			// F1: a turn the policy sent to the sandbox that cannot run is refused to the
			// requester (they may send it again later) and not counted; the operator sees
			// agent_missing with the install command.
			return fail(AgentMissing, detail)
		}
		// A trusted peer's direct turn: the task stays in the inbox for the operator to
		// answer by hand (as with auto-reply off).
		tr.fail(stage, AgentMissing, detail)
		return outcome{hold: true, code: AgentMissing, detail: detail}
	}
	sub := t.Peer + "/" + t.Interaction
	if err := sandbox.ValidateRelPath(sub); err != nil {
		return fail(reasons.BadRequest, "work dir: "+err.Error())
	}
	rs := sandbox.Spec{
		ID: run, Mode: sandbox.ModeDirect, RunRoot: e.o.Dirs.RunRoot, WorkRoot: set.DirectWork, WorkSub: sub,
		Limits: sandbox.Limits{WallClock: c.APITimeout, Memory: c.Sandbox.MemoryMax, Tasks: int64(c.Sandbox.TasksMax), Disk: c.Sandbox.DiskMax},
	}
	params := agents.Params{Agent: agents.Agent(c.Agent), Task: t.Text, Sandboxed: sandboxed}
	tr.ok(stage, prog)
	var usage json.RawMessage
	if sandboxed {
		// E10: the agent's interpreter is part of the agent; a wrong one is refused here,
		// before the probe and before anything is counted.
		rt, err := resolveRuntime(ctx, spec, prog, c.AgentRuntime, e.o.LookPath, e.runtimeVersion(c))
		if err != nil {
			return fail(runtimeCode(err), err.Error())
		}
		if rt.Program != "" {
			tr.ok(stage, "runtime "+rt.Program+" "+rt.Version)
		}
		rs.RuntimeTree, rs.RuntimeBin = rt.Tree, rt.Bin
		// P2: the probe first; a failed probe or a helper that is down starts nothing.
		stage = "probe"
		res, err := e.probeNow(ctx)
		if err != nil {
			return fail(codeOf(err), err.Error())
		} else if !res.OK {
			return fail(res.Code, res.Detail)
		}
		tr.ok(stage, "limits "+string(res.Limits))
		stage = "endpoint"
		rs.Mode, rs.WorkRoot, rs.Hidden, rs.Port = sandbox.ModeSandbox, e.o.Dirs.SandboxWork, e.o.Dirs.Hidden, SandboxPort
		// The backend's shape says where the endpoint listens and which paths the agent
		// sees: a Seatbelt run shares the host's loopback and file system (M1).
		loopback := res.Shape.Endpoint == sandbox.EndpointLoopback
		pol := egresswire.Policy{RunID: run, Agent: string(c.Agent), APIBase: c.APIBase, Model: c.Model, Allow: c.EgressAllow, Allowance: allowance}
		if loopback {
			pol.Listen = egresswire.ListenLoopback
		}
		ep, err := e.o.Endpoints.Open(ctx, pol)
		if err != nil {
			return fail(codeOf(err), err.Error())
		}
		defer func() {
			// The endpoint outlives the run by nothing: close it whatever happened.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			u, err := e.o.Endpoints.Close(cctx, run)
			if err != nil {
				log.Warn("close endpoint", "err", err)
			}
			usage = u
		}()
		if loopback {
			if rs.Port, err = loopbackPort(ep.Addr); err != nil {
				return fail(reasons.SandboxStartFailed, err.Error())
			}
			rs.EndpointAddr = ep.Addr
		} else {
			rs.Endpoint = ep.Socket
		}
		params.Model, params.Port, params.Placeholder, params.Loopback = ep.Model, rs.Port, ep.Placeholder, loopback
		// The agent's config files go into the run's own home (Spec.HomeFiles), which
		// anet-sandboxd creates fresh and deletes with the run: nothing of them lingers in
		// the work dir or reaches a later run. They hold no secret: the placeholder is only
		// in the environment.
		params.Home = sandbox.SandboxHome
		if res.Shape.HostPaths {
			params.Home, params.Tmp, params.Work = sandbox.HostRunDirs(rs)
		}
		tr.ok(stage, "model "+ep.Model)
	}
	stage = "agent_config"
	launch, err := agents.For(params)
	if err != nil {
		return fail(codeOf(err), err.Error())
	}
	rs.Argv = append([]string{prog}, launch.Argv[1:]...)
	rs.AgentTree = packageTree(prog)
	rs.Env = launch.EnvList()
	for _, f := range launch.Files {
		rs.HomeFiles = append(rs.HomeFiles, sandbox.HomeFile{Path: f.Path, Mode: f.Mode & 0o700, Content: []byte(f.Content)})
	}
	workDir := filepath.Join(rs.WorkRoot, sub)
	if err := prepareWork(rs.WorkRoot, sub, launch); err != nil {
		return fail(reasons.SandboxStartFailed, err.Error())
	}
	tr.ok(stage, fmt.Sprintf("%d files", len(launch.Files)))
	stage = "run"
	started()
	log.Info("agent starting", "agent", c.Agent, "mode", rs.Mode, "program", prog)
	tr.progress(stage, "agent started")
	stopWatch := func() {}
	if sandboxed {
		stopWatch = tr.watchRun(ctx, e.o.Endpoints, run)
	}
	res, err := sandbox.RunToEnd(ctx, e.o.Sandbox, rs)
	stopWatch()
	if err != nil {
		// Nothing ran (the helper says so with a reason code).
		if codeOf(err) == reasons.SelfCheckFailed {
			// The check before the turn found the sandbox wanting (M1): until the next
			// probe, status shows it unavailable with the failed item.
			e.noteSandboxDown(codeOf(err), err.Error())
		}
		return fail(codeOf(err), err.Error())
	}
	tr.ok(stage, fmt.Sprintf("exit %d, limits %s", res.Outcome.ExitCode, res.Outcome.Cgroup))
	if res.Outcome.Cgroup != "" {
		e.noteLimits(res.Outcome.Cgroup)
	}
	out := outcome{ran: true, refusal: TurnFailed, details: map[string]any{
		"exit_code": res.Outcome.ExitCode, "limit": res.Outcome.Limit, "cgroup": res.Outcome.Cgroup, "mode": rs.Mode,
	}}
	// Filled in by the deferred endpoint close, before the caller reads it.
	out.usage, out.metered = &usage, sandboxed
	out.stderr = []byte(reasons.Clip(string(maskToken(res.Stderr, params.Placeholder)), maxRunLogStderr))
	ans, code, detail := answerOf(res, workDir, launch, params.Placeholder)
	stage = "answer"
	if code != "" {
		tr.fail(stage, code, detail)
		out.code, out.detail = code, detail
		return out
	}
	tr.ok(stage, fmt.Sprintf("%d bytes", len(ans)))
	out.answer = ans
	return out
}

// loopbackPort is the port of an endpoint on the host's loopback ("127.0.0.1:P").
func loopbackPort(addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil || host != "127.0.0.1" || n < 1 || n > 65535 {
		return 0, fmt.Errorf("endpoint address %q: want 127.0.0.1:PORT", addr)
	}
	return n, nil
}

// answerOf reads the agent's final answer of a finished run, or why there is none. token is
// the run's placeholder ("" in direct mode): it is dead once the endpoint closes, but it stays
// out of the detail (logs, chain) anyway, and it is replaced before the output is parsed or
// clipped, as a clipped token would no longer match.
func answerOf(res RunResult, workDir string, launch agents.Launch, token string) (string, reasons.Code, string) {
	res.Stdout = maskToken(res.Stdout, token)
	res.Stderr = maskToken(res.Stderr, token)
	if res.Outcome.ExitCode != 0 || res.Outcome.Limit != "" {
		detail := fmt.Sprintf("agent exited with %d", res.Outcome.ExitCode)
		if res.Outcome.Limit != "" {
			detail += ", " + string(res.Outcome.Limit)
		}
		if e := strings.TrimSpace(string(res.Stderr)); e != "" {
			detail += ": " + reasons.Clip(e, 300)
		}
		return "", agents.NoAnswer, detail
	}
	files, err := agents.ReadAnswerFile(workDir, launch.Answer)
	if err != nil {
		return "", agents.NoAnswer, err.Error()
	}
	ans, err := agents.ParseAnswer(launch.Answer, res.Stdout, files)
	if err != nil {
		return "", agents.NoAnswer, err.Error()
	}
	return ans, "", ""
}

// AgentProgram finds the program of c's agent as a turn starts it: on anetd's PATH, made
// absolute. `anet doctor` shows what it finds.
func (e *Engine) AgentProgram(c config.AutoReply) (string, error) {
	spec, ok := agents.Lookup(string(c.Agent))
	if !ok {
		return "", fmt.Errorf("unknown agent %q", c.Agent)
	}
	prog, err := e.o.LookPath(spec.Binary)
	if err != nil {
		return "", fmt.Errorf("%s: %w", spec.Binary, err)
	}
	return filepath.Abs(prog)
}

// maskToken replaces the run's placeholder in b ("" in direct mode: nothing to mask).
func maskToken(b []byte, token string) []byte {
	if token == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(token), []byte("[placeholder]"))
}

// prepareWork makes the run's work dir and removes a stale answer file, through os.Root: the
// work dir belongs to earlier runs of the same interaction, which may have left links to
// anywhere; none is followed out of the work root.
func prepareWork(root, sub string, l agents.Launch) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("work root: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("work root: %w", err)
	}
	defer r.Close()
	if err := r.MkdirAll(sub, 0o700); err != nil {
		return fmt.Errorf("work dir %s: %w", sub, err)
	}
	if l.Answer.Kind == agents.AnswerFile && l.Answer.File != "" {
		// A stale answer from an earlier run must not pass for this one's.
		if err := r.Remove(path.Join(sub, l.Answer.File)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale answer: %w", err)
		}
	}
	return nil
}

// packageTree returns the npm package directory of an agent installed with npm (claude,
// codex, opencode, openclaw): its program is a link into <prefix>/lib/node_modules/<pkg>/,
// and the package needs more than the program's own directory (codex.js loads its vendored
// binary from ../vendor). "" lets the launcher use the program's directory.
func packageTree(prog string) string {
	real, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return ""
	}
	const nm = "/node_modules/"
	i := strings.LastIndex(real, nm)
	if i < 0 {
		return ""
	}
	rest := strings.Split(real[i+len(nm):], "/")
	n := 1
	if strings.HasPrefix(rest[0], "@") {
		n = 2
	}
	if len(rest) <= n {
		return ""
	}
	return real[:i+len(nm)] + strings.Join(rest[:n], "/")
}
