package seatbelt

import (
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/sandbox"
)

// SandboxExec is the one sandbox-exec this backend runs: by absolute path, never found on a
// PATH a caller could prepend to.
const SandboxExec = "/usr/bin/sandbox-exec"

//go:embed profile.sb
var profileText string

// Profile is the profile text: the same bytes for every run.
func Profile() string { return profileText }

// The profile's parameters, by name.
const (
	ParamHome         = "HOME_DIR"
	ParamTmp          = "TMP_DIR"
	ParamWork         = "WORK_DIR"
	ParamAgentTree    = "AGENT_TREE"
	ParamSelf         = "SELF"
	ParamEndpointPort = "ENDPOINT_PORT"
	ParamOperatorHome = "OPERATOR_HOME"
)

// writableParams are the parameters the profile may open for writing (Lint enforces it).
var writableParams = map[string]bool{ParamHome: true, ParamTmp: true, ParamWork: true}

// Params are one run's parameter values. Paths are resolved (no symlink on the way: Seatbelt
// matches the path the kernel resolved, /private/tmp and not /tmp) and clean.
type Params struct {
	Home, Tmp, Work string
	// AgentTree is read and run; for an agent in a system dir it is that dir.
	AgentTree string
	// Self is anet-sandboxd (the self-check program).
	Self         string
	EndpointPort int
	OperatorHome string
}

// Values returns the parameters by name.
func (p Params) Values() map[string]string {
	return map[string]string{
		ParamHome: p.Home, ParamTmp: p.Tmp, ParamWork: p.Work, ParamAgentTree: p.AgentTree,
		ParamSelf: p.Self, ParamEndpointPort: strconv.Itoa(p.EndpointPort), ParamOperatorHome: p.OperatorHome,
	}
}

// Validate checks the values: clean absolute paths without a character that could end a
// parameter early, written dirs that are neither broad nor around the operator's home, an
// agent tree that does not hold the operator's home, and a real port.
func (p Params) Validate() error {
	var errs []error
	for _, n := range []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamSelf, ParamOperatorHome} {
		v := p.Values()[n]
		if !filepath.IsAbs(v) || filepath.Clean(v) != v || strings.ContainsAny(v, "\x00\n\r\"\\") {
			errs = append(errs, fmt.Errorf("%s %q: want a clean absolute path", n, v))
			continue
		}
		if n == ParamOperatorHome || n == ParamSelf {
			continue
		}
		if strings.Count(v, "/") < 2 || broadRoots[v] {
			errs = append(errs, fmt.Errorf("%s %q: too broad to open to a run", n, v))
		}
		if p.OperatorHome != "" && sandbox.Within(p.OperatorHome, v) {
			errs = append(errs, fmt.Errorf("%s %q: contains the operator's home", n, v))
		}
	}
	if p.EndpointPort < 1 || p.EndpointPort > 65535 {
		errs = append(errs, fmt.Errorf("%s %d: want 1-65535", ParamEndpointPort, p.EndpointPort))
	}
	return errors.Join(errs...)
}

// Defines returns the -D arguments of sandbox-exec, sorted by name.
func (p Params) Defines() []string {
	v := p.Values()
	names := make([]string, 0, len(v))
	for n := range v {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, 0, 2*len(names))
	for _, n := range names {
		out = append(out, "-D", n+"="+v[n])
	}
	return out
}

// Argv is the command line that runs argv under the profile with p: sandbox-exec by its
// absolute path, the profile text, the parameters, then the program. It is pure and checks
// everything it renders (the parameters, and the profile against them); a bad input is an
// error, never a weaker command line.
func Argv(p Params, argv []string) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("seatbelt argv: %w", err)
	}
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return nil, errors.New("seatbelt argv: want an absolute program path first")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("seatbelt argv: argv[%d] contains NUL", i)
		}
	}
	names := make([]string, 0, 8)
	for n := range p.Values() {
		names = append(names, n)
	}
	if err := Lint(profileText, names); err != nil {
		return nil, fmt.Errorf("seatbelt argv: %w", err)
	}
	out := []string{SandboxExec, "-p", profileText}
	out = append(out, p.Defines()...)
	out = append(out, "--")
	return append(out, argv...), nil
}

// programTrees are the trees the profile lets a run start programs from, whatever its
// parameters: a program in one of them needs no agent tree of its own.
var programTrees = []string{
	"/usr/bin", "/usr/sbin", "/usr/libexec", "/bin", "/sbin",
	"/opt/homebrew/bin", "/opt/homebrew/sbin", "/opt/homebrew/Cellar", "/opt/homebrew/lib", "/opt/homebrew/opt",
	"/usr/local/bin", "/usr/local/sbin", "/usr/local/Cellar", "/usr/local/lib", "/usr/local/opt",
}

// neutralTree is AGENT_TREE for a program in programTrees: a tree the profile opens anyway.
const neutralTree = "/usr/bin"

func inProgramTrees(prog string) bool {
	for _, d := range programTrees {
		if sandbox.Within(prog, d) {
			return true
		}
	}
	return false
}
