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

// PATH is a macOS run's PATH: Homebrew's prefixes (Apple silicon, then Intel) before the
// system's, so an agent's `#!/usr/bin/env node` finds node.
const PATH = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

// RunEnv is the environment of a run with home and tmp, given the endpoint variables handed
// in: the launcher's base (S5) and nothing of the host's. It is the same whichever Homebrew
// prefix or developer dir the host has: the profile opens what those need (OpenSSL's files,
// the developer dir the xcrun shims find through the select link), so no OPENSSL_CONF,
// SSL_CERT_FILE or DEVELOPER_DIR is added, and one handed in (an endpoint CA's
// SSL_CERT_FILE) is passed on as it is.
func RunEnv(home, tmp string, given []string) []string {
	return append(sandbox.HostPathEnv(home, tmp, PATH), given...)
}

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
	ParamDeveloperDir = "DEVELOPER_DIR"
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
	// DeveloperDir is the active developer dir (DeveloperDir), read and run.
	DeveloperDir string
	// Self is anet-sandboxd (the self-check program).
	Self         string
	EndpointPort int
	OperatorHome string
}

// Values returns the parameters by name.
func (p Params) Values() map[string]string {
	return map[string]string{
		ParamHome: p.Home, ParamTmp: p.Tmp, ParamWork: p.Work, ParamAgentTree: p.AgentTree,
		ParamDeveloperDir: p.DeveloperDir, ParamSelf: p.Self, ParamEndpointPort: strconv.Itoa(p.EndpointPort),
		ParamOperatorHome: p.OperatorHome,
	}
}

// Validate checks the values: clean absolute paths without a character that could end a
// parameter early, written dirs that are neither broad nor around the operator's home, an
// agent tree and a developer dir that do not hold the operator's home, and a real port.
func (p Params) Validate() error {
	var errs []error
	for _, n := range []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamDeveloperDir, ParamSelf, ParamOperatorHome} {
		if err := checkPath(n, p.Values()[n], p.OperatorHome); err != nil {
			errs = append(errs, err)
		}
	}
	if p.EndpointPort < 1 || p.EndpointPort > 65535 {
		errs = append(errs, fmt.Errorf("%s %d: want 1-65535", ParamEndpointPort, p.EndpointPort))
	}
	return errors.Join(errs...)
}

// checkPath checks the path parameter n: a clean absolute path that cannot end the
// parameter early and, for a tree the profile opens (all but SELF, a single file, and
// OPERATOR_HOME, which only the closing denies use), neither broad nor around the operator's
// home.
func checkPath(n, v, operatorHome string) error {
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || strings.ContainsAny(v, "\x00\n\r\"\\") {
		return fmt.Errorf("%s %q: want a clean absolute path", n, v)
	}
	if n == ParamOperatorHome || n == ParamSelf {
		return nil
	}
	var errs []error
	if strings.Count(v, "/") < 2 || broadRoots[v] {
		errs = append(errs, fmt.Errorf("%s %q: too broad to open to a run", n, v))
	}
	if operatorHome != "" && sandbox.Within(operatorHome, v) {
		errs = append(errs, fmt.Errorf("%s %q: contains the operator's home", n, v))
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

// agentTreeOf is AGENT_TREE for the program prog: neutralTree for a program in
// programTrees when the spec names no tree (named), else the plan's resolved tree (tree, or
// prog's dir), which must hold prog.
func agentTreeOf(prog string, named bool, tree string) (string, error) {
	if !named && inProgramTrees(prog) {
		return neutralTree, nil
	}
	if tree == "" {
		tree = filepath.Dir(prog)
	}
	if !sandbox.Within(prog, tree) {
		return "", fmt.Errorf("agent %s: not inside its tree %s", prog, tree)
	}
	return tree, nil
}

func inProgramTrees(prog string) bool {
	for _, d := range programTrees {
		if sandbox.Within(prog, d) {
			return true
		}
	}
	return false
}
