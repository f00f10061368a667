// Package sandbox is the platform-neutral side of the agent launcher, and all of it that
// anetd links: the serialisable run spec and its validation (spec.go), resource limits and
// the codes of the limit that ended a run (limits.go), the Launcher/Run seam and a run's
// outcome (run.go), the probe's result (probe.go), the wire format anetd and anet-sandboxd
// speak over the seam (wire.go), the probe cache, and the mapping of launcher failures to
// reason codes (F2).
// Nothing here starts a process: that is pkg/sandbox/launch and its backends
// (pkg/sandbox/bwrap on Linux), linked only by anet-sandboxd (internal/boundaries checks it).
package sandbox

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"anet.dev/anet/pkg/linksafe"
)

// Mode says how a run is isolated.
type Mode string

const (
	// ModeSandbox runs the agent in the platform sandbox (S1–S7).
	ModeSandbox Mode = "sandbox"
	// ModeDirect runs a trusted agent unsandboxed as the operator's user (P4), with the
	// same wall clock.
	ModeDirect Mode = "direct"
)

// Paths inside the sandbox. They are fixed so that nothing about the host layout (user name,
// cache location) leaks into the run, and so agents can be configured once.
const (
	SandboxWork     = "/work"
	SandboxHome     = "/home/agent"
	SandboxTmp      = "/tmp"
	SandboxRunDir   = "/run/anet"
	SandboxEndpoint = "/run/anet/endpoint.sock"
	// SandboxSelf is anet-sandboxd, bound only into a run whose program it is (self-test's
	// attack battery).
	SandboxSelf = "/run/anet/anet-sandboxd"
	// SandboxInit is the run's pid 1 (anet-runinit), bound into every run.
	SandboxInit    = "/run/anet/init"
	SandboxEnvFile = "/run/anet/env"
	// SandboxPATH is the minimal PATH (S5).
	SandboxPATH = "/usr/local/bin:/usr/bin:/bin"
)

// Spec is one run, as anetd (or `exec`) asks for it. It is plain data: the launcher resolves
// and checks every host path again when it applies the spec (fail closed twice).
type Spec struct {
	// ID names the run; it becomes a directory name and a cgroup name.
	ID   string `json:"id"`
	Mode Mode   `json:"mode"`
	// Argv is the agent command; Argv[0] is an absolute host path (resolved by the caller).
	Argv []string `json:"argv"`
	// Agent names the agent (pkg/agents) whose program Argv[0] is, and is empty for any
	// other program (the probe's, a self-test's, an operator's shell): the caller says it,
	// so that a backend that checks an agent before its run (Seatbelt's self-check, M1)
	// never guesses it from a file name.
	Agent string `json:"agent,omitempty"`
	// AgentTree is the agent's installation directory, bound read-only at its own path.
	// Empty: the directory of realpath(Argv[0]) unless that is already a system directory.
	AgentTree string `json:"agent_tree,omitempty"`
	// RuntimeTree is the installation directory of the agent's interpreter when it is not a
	// system one (a Node from a per-user or per-project prefix that an agent's
	// "#!/usr/bin/env node" must find), bound read-only at its own path like the agent tree.
	// RuntimeBin is the directory of the interpreter program inside it, put first on the
	// run's PATH. Both empty: the system's interpreters only.
	RuntimeTree string `json:"runtime_tree,omitempty"`
	RuntimeBin  string `json:"runtime_bin,omitempty"`
	// WorkRoot is the root of work dirs (<cache>/anet/work-sandbox or …/work) and WorkSub the
	// run's dir below it ("<aid>/<interaction>"). Components of WorkSub are created without
	// following links. Both empty: the run gets a fresh work dir removed at its end.
	WorkRoot string `json:"work_root,omitempty"`
	WorkSub  string `json:"work_sub,omitempty"`
	// RunRoot holds the per-run home and tmp (<RunRoot>/<ID>/{home,tmp}), deleted at the end.
	RunRoot string `json:"run_root"`
	// Endpoint is the host path of the run's endpoint socket (from anet-egress); empty: none.
	Endpoint string `json:"endpoint,omitempty"`
	// EndpointAddr is the run's endpoint as a host loopback TCP address ("127.0.0.1:P"), for
	// a backend whose runs share the host's loopback (Seatbelt has no network namespace): the
	// run reaches it directly, and Port must be P. At most one of Endpoint and EndpointAddr.
	EndpointAddr string `json:"endpoint_addr,omitempty"`
	// Port is the loopback port the agent is pointed at: the one init listens on inside the
	// sandbox and relays to Endpoint, or EndpointAddr's port.
	Port int `json:"port,omitempty"`
	// Env holds the endpoint variables handed in ("NAME=value"); see ValidateEnvName.
	Env []string `json:"env,omitempty"`
	// Hidden lists host paths that must never be visible in the run: data dir, runtime dir,
	// config dir, control token. The agent tree may not lie under (or contain) any of them.
	Hidden []string `json:"hidden,omitempty"`
	Limits Limits   `json:"limits"`
	// HomeFiles are written into the run's fresh home before the agent starts (an agent's
	// configuration: pkg/agents). Sandbox mode only: a direct run's home is the operator's.
	HomeFiles []HomeFile `json:"home_files,omitempty"`
}

// HomeFile is one file written into a sandboxed run's home.
type HomeFile struct {
	// Path is relative to the home, plain names only; parents are created 0700.
	Path string `json:"path"`
	// Mode is the file's permission bits (at most 0700).
	Mode    uint32 `json:"mode"`
	Content []byte `json:"content"`
}

// Bounds on HomeFiles: agent configuration files are small, and the spec travels in one
// privsep message.
const (
	maxHomeFiles     = 16
	maxHomeFileBytes = 32 << 10
)

// validID accepts 1-64 of [A-Za-z0-9_.-], not starting with one of "_.-". Hand-written: a
// package-level regexp costs every process start, and init (pid 1 of each run) is one.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// validAgentName accepts "" or an agent's name as pkg/agents spells them.
func validAgentName(n string) bool {
	if len(n) > 32 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks the spec's shape. It does not touch the file system.
func (s *Spec) Validate() error {
	var errs []error
	if !validID(s.ID) || strings.Contains(s.ID, "..") {
		errs = append(errs, fmt.Errorf("id %q: want 1-64 of [A-Za-z0-9_.-], not starting with . or containing ..", s.ID))
	}
	switch s.Mode {
	case ModeSandbox, ModeDirect:
	default:
		errs = append(errs, fmt.Errorf("mode %q: want %q or %q", s.Mode, ModeSandbox, ModeDirect))
	}
	if len(s.Argv) == 0 || !filepath.IsAbs(s.Argv[0]) {
		errs = append(errs, errors.New("argv: want an absolute program path first"))
	}
	for i, a := range s.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			errs = append(errs, fmt.Errorf("argv[%d]: contains NUL", i))
		}
	}
	if !validAgentName(s.Agent) {
		errs = append(errs, fmt.Errorf("agent %q: want empty or 1-32 of [a-z0-9-]", s.Agent))
	}
	for _, p := range []struct{ name, v string }{
		{"agent_tree", s.AgentTree}, {"work_root", s.WorkRoot}, {"endpoint", s.Endpoint},
		{"runtime_tree", s.RuntimeTree}, {"runtime_bin", s.RuntimeBin},
	} {
		if p.v != "" && !cleanAbs(p.v) {
			errs = append(errs, fmt.Errorf("%s %q: want a clean absolute path", p.name, p.v))
		}
	}
	if (s.RuntimeTree == "") != (s.RuntimeBin == "") || s.RuntimeTree != "" && !Within(s.RuntimeBin, s.RuntimeTree) {
		errs = append(errs, fmt.Errorf("runtime_bin %q: want a directory inside runtime_tree %q, both set or neither", s.RuntimeBin, s.RuntimeTree))
	}
	if strings.ContainsRune(s.RuntimeBin, ':') {
		errs = append(errs, fmt.Errorf("runtime_bin %q: a PATH entry cannot hold ':'", s.RuntimeBin))
	}
	if s.RunRoot == "" || !cleanAbs(s.RunRoot) {
		errs = append(errs, fmt.Errorf("run_root %q: want a clean absolute path", s.RunRoot))
	}
	if s.WorkSub != "" {
		if s.WorkRoot == "" {
			errs = append(errs, errors.New("work_sub: needs work_root"))
		}
		if err := linksafe.ValidateRelPath(s.WorkSub); err != nil {
			errs = append(errs, fmt.Errorf("work_sub: %w", err))
		}
	}
	if s.Port < 0 || s.Port > 65535 || (s.Endpoint != "" && s.Port == 0) {
		errs = append(errs, fmt.Errorf("port %d: want 1-65535 when an endpoint is set", s.Port))
	}
	if err := validateEndpointAddr(s.EndpointAddr, s.Endpoint, s.Port); err != nil {
		errs = append(errs, err)
	}
	for _, h := range s.Hidden {
		if !cleanAbs(h) {
			errs = append(errs, fmt.Errorf("hidden %q: want a clean absolute path", h))
		}
	}
	if err := ValidateEnv(s.Env, s.Port); err != nil {
		errs = append(errs, err)
	}
	if err := s.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateHomeFiles(s.Mode, s.HomeFiles); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &SpecError{Err: errors.Join(errs...)}
	}
	return nil
}

// SpecError is a spec that fails Validate: its shape is wrong, whatever the host holds (a
// caller's mistake, which `anet-sandboxd exec` reports as a usage error).
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return "run spec: " + e.Err.Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// validateEndpointAddr accepts "" or "127.0.0.1:P" with P the spec's port, never beside an
// endpoint socket. Only the IPv4 loopback: it is what agents are configured with, and what a
// Seatbelt profile's "localhost" filter matches.
func validateEndpointAddr(addr, sock string, port int) error {
	if addr == "" {
		return nil
	}
	if sock != "" {
		return errors.New("endpoint_addr: not beside an endpoint socket (one endpoint per run)")
	}
	host, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil || host != "127.0.0.1" || n < 1 || n > 65535 || p != strconv.Itoa(n) {
		return fmt.Errorf("endpoint_addr %q: want 127.0.0.1:PORT", addr)
	}
	if n != port {
		return fmt.Errorf("endpoint_addr %q: its port must be the spec's port %d (the agent is pointed there)", addr, port)
	}
	return nil
}

func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && strings.IndexByte(p, 0) < 0
}

func validateHomeFiles(mode Mode, files []HomeFile) error {
	if len(files) == 0 {
		return nil
	}
	if mode != ModeSandbox {
		return errors.New("home_files: only for sandboxed runs")
	}
	if len(files) > maxHomeFiles {
		return fmt.Errorf("home_files: %d files (at most %d)", len(files), maxHomeFiles)
	}
	total := 0
	seen := map[string]bool{}
	for i, f := range files {
		if err := linksafe.ValidateRelPath(f.Path); err != nil {
			return fmt.Errorf("home_files[%d].path %q: %w", i, f.Path, err)
		}
		if seen[f.Path] {
			return fmt.Errorf("home_files[%d].path %q: given twice", i, f.Path)
		}
		seen[f.Path] = true
		if f.Mode&^0o700 != 0 {
			return fmt.Errorf("home_files[%d].mode %04o: at most 0700 (the run's files are its own)", i, f.Mode)
		}
		total += len(f.Content)
	}
	if total > maxHomeFileBytes {
		return fmt.Errorf("home_files: %d bytes in all (at most %d)", total, maxHomeFileBytes)
	}
	return nil
}
