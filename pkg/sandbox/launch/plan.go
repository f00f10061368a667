package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"anet.dev/anet/pkg/sandbox"
)

// Plan is a run as it is applied: its spec, checked once (sandbox.Spec.Validate), and the
// host paths it exposes, resolved to real paths and checked against the rules of what a run
// may see (S3, F3). Only Prepare and NewPlan make one, so a backend or a direct run that is
// handed a Plan checks nothing of it again; what a backend adds (its layout, its fd table,
// its limits mechanism) it checks itself, as its own steps.
type Plan struct {
	spec sandbox.Spec
	host HostPaths
}

// HostPaths are the host paths of a run, real (no symlink in them) and checked.
type HostPaths struct {
	// Prog is the program the run executes: the real path of Argv[0], or Argv[0] itself
	// when it is a program the backend binds (sandbox.SandboxSelf, sandbox.SandboxInit).
	Prog string
	// AgentTree is the host dir bound read-only at its own path for the program, "" when
	// the program lies in a system dir (or is the backend's own).
	AgentTree string
	// RuntimeTree and RuntimeBin are the interpreter's tree and bin dir (Spec.RuntimeTree,
	// RuntimeBin), "" for none.
	RuntimeTree, RuntimeBin string
	// Endpoint is the endpoint socket (Spec.Endpoint), "" for none.
	Endpoint string
}

// Prepare checks spec and, for a sandboxed run, resolves the host paths it exposes: the
// first step of every start, and the only place a spec is validated on it.
func Prepare(spec sandbox.Spec) (*Plan, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode == sandbox.ModeDirect {
		if spec.WorkRoot == "" {
			return nil, fmt.Errorf("start direct %s: work_root: required in direct mode", spec.ID)
		}
		// A trusted agent runs as the operator and sees what the operator sees (P4).
		return &Plan{spec: spec, host: HostPaths{Prog: spec.Argv[0]}}, nil
	}
	host, err := resolve(spec)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.ID, err)
	}
	// The tree rule compares real paths; a run with no tree of its own (a program in a system
	// dir) needs none of them resolved, and a launch is measured.
	home, hidden := "", spec.Hidden
	if host.AgentTree != "" || host.RuntimeTree != "" {
		h, _ := os.UserHomeDir()
		home, hidden = realPath(h), realPaths(spec.Hidden)
	}
	if err := checkHost(spec, host, home, hidden); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.ID, err)
	}
	return &Plan{spec: spec, host: host}, nil
}

// NewPlan is Prepare for host paths already resolved (a test's, a fixed layout's): the same
// checks, without the file system. The operator's home is not looked at.
func NewPlan(spec sandbox.Spec, host HostPaths) (*Plan, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode != sandbox.ModeSandbox {
		return nil, fmt.Errorf("plan %s: mode %q is not sandboxed", spec.ID, spec.Mode)
	}
	if err := checkHost(spec, host, "", spec.Hidden); err != nil {
		return nil, fmt.Errorf("plan %s: %w", spec.ID, err)
	}
	return &Plan{spec: spec, host: host}, nil
}

// Spec is the run's spec as asked. Its slices are the plan's: callers read, never write.
func (p *Plan) Spec() sandbox.Spec { return p.spec }

// ID is the run's id.
func (p *Plan) ID() string { return p.spec.ID }

// Limits are the run's limits with the defaults applied.
func (p *Plan) Limits() sandbox.Limits { return p.spec.Limits.WithDefaults() }

// Host are the run's resolved host paths.
func (p *Plan) Host() HostPaths { return p.host }

// Argv is the command the run executes: the resolved program, then the spec's arguments.
func (p *Plan) Argv() []string {
	return append([]string{p.host.Prog}, p.spec.Argv[1:]...)
}

// resolve finds the real host paths of spec's program, agent tree, interpreter and endpoint.
func resolve(spec sandbox.Spec) (HostPaths, error) {
	var h HostPaths
	switch spec.Argv[0] {
	case sandbox.SandboxSelf, sandbox.SandboxInit:
		h.Prog = spec.Argv[0] // anet-sandboxd or the run's init: the backend binds it there
	default:
		prog, err := filepath.EvalSymlinks(spec.Argv[0])
		if err != nil {
			return h, fmt.Errorf("agent %s: %w", spec.Argv[0], err)
		}
		h.Prog = prog
		switch {
		case spec.AgentTree != "":
			if h.AgentTree, err = filepath.EvalSymlinks(spec.AgentTree); err != nil {
				return h, fmt.Errorf("agent tree %s: %w", spec.AgentTree, err)
			}
		case !inSystemDir(prog):
			h.AgentTree = filepath.Dir(prog)
		}
	}
	if spec.RuntimeTree != "" {
		var err error
		if h.RuntimeTree, err = filepath.EvalSymlinks(spec.RuntimeTree); err != nil {
			return h, fmt.Errorf("agent runtime tree %s: %w", spec.RuntimeTree, err)
		}
		if h.RuntimeBin, err = filepath.EvalSymlinks(spec.RuntimeBin); err != nil {
			return h, fmt.Errorf("agent runtime bin %s: %w", spec.RuntimeBin, err)
		}
	}
	if spec.Endpoint != "" {
		ep, err := filepath.EvalSymlinks(spec.Endpoint)
		if err != nil {
			return h, fmt.Errorf("endpoint: %w", err)
		}
		if fi, err := os.Lstat(ep); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return h, fmt.Errorf("endpoint %s is not a socket", ep)
		}
		h.Endpoint = ep
	}
	return h, nil
}

// checkHost applies the rules of what a run may see to its resolved host paths: the program
// lies in a system dir or in its tree, and the agent's and the interpreter's trees pass
// CheckAgentTree against the hidden dirs and the operator's home (S3, F3).
func checkHost(spec sandbox.Spec, h HostPaths, home string, hidden []string) error {
	var errs []error
	for _, p := range []struct{ name, v string }{
		{"program", h.Prog}, {"agent tree", h.AgentTree}, {"runtime tree", h.RuntimeTree},
		{"runtime bin", h.RuntimeBin}, {"endpoint", h.Endpoint},
	} {
		if p.v != "" && (!filepath.IsAbs(p.v) || filepath.Clean(p.v) != p.v) {
			errs = append(errs, fmt.Errorf("%s %q: want a clean absolute path", p.name, p.v))
		}
	}
	if h.Prog == "" {
		errs = append(errs, errors.New("program: not resolved"))
	}
	if h.AgentTree != "" {
		if !within(h.Prog, h.AgentTree) {
			errs = append(errs, fmt.Errorf("agent %s: not inside its tree %s", h.Prog, h.AgentTree))
		}
		if err := CheckAgentTree(h.AgentTree, hidden, home); err != nil {
			errs = append(errs, err)
		}
	}
	if (h.RuntimeTree == "") != (spec.RuntimeTree == "") || (h.RuntimeTree == "") != (h.RuntimeBin == "") ||
		h.RuntimeTree != "" && !within(h.RuntimeBin, h.RuntimeTree) {
		errs = append(errs, fmt.Errorf("agent runtime bin %q: want a directory inside the runtime tree %q", h.RuntimeBin, h.RuntimeTree))
	}
	if h.RuntimeTree != "" {
		if err := CheckAgentTree(h.RuntimeTree, hidden, home); err != nil {
			errs = append(errs, fmt.Errorf("agent runtime: %w", err))
		}
	}
	if (spec.Endpoint == "") != (h.Endpoint == "") {
		errs = append(errs, errors.New("endpoint: must be resolved exactly when the spec has one"))
	}
	return errors.Join(errs...)
}

// inSystemDir reports whether p lies in one of DefaultSystemDirs.
func inSystemDir(p string) bool {
	for _, d := range DefaultSystemDirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// realPath is p without symlinks, or p itself when that cannot be found.
func realPath(p string) string {
	if p == "" {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func realPaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, realPath(p))
	}
	return out
}
