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
	"anet.dev/anet/pkg/linksafe"
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
	x := &execRun{e: e, log: log, run: run, task: t, c: set.Config, set: set, sandboxed: route == RouteSandbox,
		allowance: allowance, started: started, tr: tr}
	out := x.stages(ctx)
	if x.endpointOpen {
		// The endpoint outlives the run by nothing: it closes whatever happened, after the
		// last stage. Its usage is a run's that ran.
		usage := x.closeEndpoint(ctx)
		if out.ran {
			out.usage = usage
		}
	}
	return out
}

// execStage is one named stage of a turn that runs a program; the name is the stage the
// turn's trace (anet autoreply test) reports.
type execStage struct {
	name string
	run  func(*execRun, context.Context) *stop
	// sandboxed: the stage belongs to sandboxed runs only.
	sandboxed bool
}

// execStages are a turn's stages, in order; the answer is read after the last.
var execStages = []execStage{
	{"agent", (*execRun).findAgent, false},
	{"agent", (*execRun).checkRuntime, true},
	{"probe", (*execRun).probe, true},
	{"endpoint", (*execRun).openEndpoint, true},
	{"agent_config", (*execRun).configure, false},
	{"run", (*execRun).runAgent, false},
}

// execRun is one turn of an agent program as its stages fill it in: each stage adds what
// the next needs, or stops the turn.
type execRun struct {
	e         *Engine
	log       *slog.Logger
	run       string
	task      peer.Task
	c         config.AutoReply
	set       *Settings
	sandboxed bool
	allowance *money.Micros
	started   func()
	tr        *tracer

	// stage is the stage running, for the trace.
	stage string
	// Filled in by the stages.
	agent        agents.Spec
	prog         string
	sub          string // the work dir under the work root: <peer>/<interaction>
	spec         sandbox.Spec
	params       agents.Params
	shape        sandbox.RunShape
	endpointOpen bool
	launch       agents.Launch
	result       RunResult
}

// stop is why a stage ended the turn: the operator's reason code and detail. A held turn is
// not refused either: the task stays in the inbox for the operator.
type stop struct {
	code   reasons.Code
	detail string
	hold   bool
}

func stopWith(code reasons.Code, detail string) *stop { return &stop{code: code, detail: detail} }

// stages runs the stages in order; the first that stops the turn gives its outcome.
func (x *execRun) stages(ctx context.Context) outcome {
	for _, s := range execStages {
		if s.sandboxed && !x.sandboxed {
			continue
		}
		x.stage = s.name
		if st := s.run(x, ctx); st != nil {
			x.tr.fail(x.stage, st.code, st.detail)
			if st.hold {
				return outcome{hold: true, code: st.code, detail: st.detail}
			}
			return outcome{refusal: reasons.SandboxUnavailable, code: st.code, detail: st.detail}
		}
	}
	x.stage = "answer"
	return x.answer()
}

// findAgent finds the agent's program and the turn's work dir, and drafts the run's spec as a
// direct run; the sandbox stages make it a sandboxed one.
func (x *execRun) findAgent(context.Context) *stop {
	c := x.c
	spec, ok := agents.Lookup(string(c.Agent))
	if !ok || (x.sandboxed && !spec.Sandbox) {
		return stopWith(reasons.AgentUnsupported, "agent "+string(c.Agent))
	}
	x.agent = spec
	prog, err := x.e.AgentProgram(c)
	if err != nil {
		// F1: a turn the policy sent to the sandbox that cannot run is refused to the
		// requester (they may send it again later) and not counted; the operator sees
		// agent_missing with the install command. A trusted peer's direct turn is held: the
		// task stays in the inbox for the operator to answer by hand (as with auto-reply
		// off).
		return &stop{code: AgentMissing, detail: fmt.Sprintf("%v (install: %s)", err, spec.Install), hold: !x.sandboxed}
	}
	x.prog = prog
	x.sub = x.task.Peer + "/" + x.task.Interaction
	if err := linksafe.ValidateRelPath(x.sub); err != nil {
		return stopWith(reasons.BadRequest, "work dir: "+err.Error())
	}
	x.spec = sandbox.Spec{
		ID: x.run, Mode: sandbox.ModeDirect, RunRoot: x.e.o.Dirs.RunRoot, WorkRoot: x.set.DirectWork, WorkSub: x.sub,
		Limits: sandbox.Limits{WallClock: c.APITimeout, Memory: c.Sandbox.MemoryMax, Tasks: int64(c.Sandbox.TasksMax), Disk: c.Sandbox.DiskMax},
	}
	x.params = agents.Params{Agent: agents.Agent(c.Agent), Task: x.task.Text, Sandboxed: x.sandboxed}
	x.tr.ok(x.stage, prog)
	return nil
}

// checkRuntime resolves the agent's interpreter (E10): it is part of the agent, so a wrong one
// is refused here, before the probe and before anything is counted.
func (x *execRun) checkRuntime(ctx context.Context) *stop {
	rt, err := resolveRuntime(ctx, x.agent, x.prog, x.c.AgentRuntime, x.e.o.LookPath, x.e.runtimeVersion(x.c))
	if err != nil {
		return stopWith(runtimeCode(err), err.Error())
	}
	if rt.Program != "" {
		x.tr.ok(x.stage, "runtime "+rt.Program+" "+rt.Version)
	}
	x.spec.RuntimeTree, x.spec.RuntimeBin = rt.Tree, rt.Bin
	return nil
}

// probe checks the sandbox first (P2): a failed probe, a helper that is down or a failed
// proof of the wall (Options.Wall) starts nothing.
func (x *execRun) probe(ctx context.Context) *stop {
	res, err := x.e.probeNow(ctx)
	if err != nil {
		return stopWith(codeOf(err), err.Error())
	} else if !res.OK {
		return stopWith(res.Code, res.Detail)
	}
	if x.e.o.Wall != nil {
		if re := x.e.o.Wall(); re != nil {
			return stopWith(re.Code, re.Detail)
		}
	}
	x.tr.ok(x.stage, "limits "+string(res.Limits))
	x.shape = res.Shape
	return nil
}

// openEndpoint opens the run's endpoint in anet-egress and makes the spec a sandboxed run's.
// Once it is open, execTurn closes it after the last stage.
func (x *execRun) openEndpoint(ctx context.Context) *stop {
	c := x.c
	x.spec.Mode, x.spec.WorkRoot, x.spec.Hidden, x.spec.Port = sandbox.ModeSandbox, x.e.o.Dirs.SandboxWork, x.e.o.Dirs.Hidden, SandboxPort
	// The spec says which program is the agent: a backend that checks an agent before its
	// run (Seatbelt's self-check, M1) checks this one.
	x.spec.Agent = string(c.Agent)
	// The backend's shape says where the endpoint listens and which paths the agent sees: a
	// Seatbelt run shares the host's loopback and file system (M1).
	loopback := x.shape.Endpoint == sandbox.EndpointLoopback
	pol := egresswire.Policy{RunID: x.run, Agent: string(c.Agent), APIBase: c.APIBase, Model: c.Model, Allow: c.EgressAllow, Allowance: x.allowance}
	if loopback {
		pol.Listen = egresswire.ListenLoopback
	}
	ep, err := x.e.o.Endpoints.Open(ctx, pol)
	if err != nil {
		return stopWith(codeOf(err), err.Error())
	}
	x.endpointOpen = true
	if loopback {
		port, err := loopbackPort(ep.Addr)
		if err != nil {
			return stopWith(reasons.SandboxStartFailed, err.Error())
		}
		x.spec.Port, x.spec.EndpointAddr = port, ep.Addr
	} else {
		x.spec.Endpoint = ep.Socket
	}
	x.params.Model, x.params.Port, x.params.Placeholder, x.params.Loopback = ep.Model, x.spec.Port, ep.Placeholder, loopback
	// The agent's config files go into the run's own home (Spec.HomeFiles), which
	// anet-sandboxd creates fresh and deletes with the run: nothing of them lingers in the
	// work dir or reaches a later run. They hold no secret: the placeholder is only in the
	// environment.
	x.params.Home = sandbox.SandboxHome
	if x.shape.HostPaths {
		x.params.Home, x.params.Tmp, x.params.Work = sandbox.HostRunDirs(x.spec)
	}
	x.tr.ok(x.stage, "model "+ep.Model)
	return nil
}

// configure writes the agent's command line, environment and config files into the spec and
// prepares the work dir.
func (x *execRun) configure(context.Context) *stop {
	launch, err := agents.For(x.params)
	if err != nil {
		return stopWith(codeOf(err), err.Error())
	}
	x.launch = launch
	x.spec.Argv = append([]string{x.prog}, launch.Argv[1:]...)
	x.spec.AgentTree = packageTree(x.prog)
	x.spec.Env = launch.EnvList()
	for _, f := range launch.Files {
		x.spec.HomeFiles = append(x.spec.HomeFiles, sandbox.HomeFile{Path: f.Path, Mode: f.Mode & 0o700, Content: []byte(f.Content)})
	}
	if err := prepareWork(x.spec.WorkRoot, x.sub, launch); err != nil {
		return stopWith(reasons.SandboxStartFailed, err.Error())
	}
	x.tr.ok(x.stage, fmt.Sprintf("%d files", len(launch.Files)))
	return nil
}

// runAgent starts the agent and waits for it to end.
func (x *execRun) runAgent(ctx context.Context) *stop {
	x.started()
	x.log.Info("agent starting", "agent", x.c.Agent, "mode", x.spec.Mode, "program", x.prog)
	x.tr.progress(x.stage, "agent started")
	stopWatch := func() {}
	if x.sandboxed {
		stopWatch = x.tr.watchRun(ctx, x.e.o.Endpoints, x.run)
	}
	res, err := sandbox.RunToEnd(ctx, x.e.o.Sandbox, x.spec)
	stopWatch()
	if err != nil {
		// Nothing ran (the helper says so with a reason code).
		if codeOf(err) == reasons.SelfCheckFailed {
			// The check before the turn found the sandbox wanting (M1): until the next
			// probe, status shows it unavailable with the failed item.
			x.e.noteSandboxDown(codeOf(err), err.Error())
		}
		return stopWith(codeOf(err), err.Error())
	}
	x.tr.ok(x.stage, fmt.Sprintf("exit %d, limits %s", res.Outcome.ExitCode, res.Outcome.Cgroup))
	if res.Outcome.Cgroup != "" {
		x.e.noteLimits(res.Outcome.Cgroup)
	}
	x.result = res
	return nil
}

// answer is the outcome of a run that ran: it counts, with the agent's answer or why there is
// none.
func (x *execRun) answer() outcome {
	res := x.result
	out := outcome{ran: true, refusal: TurnFailed, metered: x.sandboxed, details: map[string]any{
		"exit_code": res.Outcome.ExitCode, "limit": res.Outcome.Limit, "cgroup": res.Outcome.Cgroup, "mode": x.spec.Mode,
	}}
	out.stderr = []byte(reasons.Clip(string(maskToken(res.Stderr, x.params.Placeholder)), maxRunLogStderr))
	ans, code, detail := answerOf(res, filepath.Join(x.spec.WorkRoot, x.sub), x.launch, x.params.Placeholder)
	if code != "" {
		x.tr.fail(x.stage, code, detail)
		out.code, out.detail = code, detail
		return out
	}
	x.tr.ok(x.stage, fmt.Sprintf("%d bytes", len(ans)))
	out.answer = ans
	return out
}

// closeEndpoint closes the run's endpoint and returns its usage (JSON; none when the close
// failed). ctx may be done: the close is made all the same.
func (x *execRun) closeEndpoint(ctx context.Context) json.RawMessage {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	usage, err := x.e.o.Endpoints.Close(cctx, x.run)
	if err != nil {
		x.log.Warn("close endpoint", "err", err)
	}
	return usage
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
