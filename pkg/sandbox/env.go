package sandbox

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The environment of a run is built from empty (S5). The launcher sets the base variables
// itself; the caller hands in only the endpoint variables (base URLs, placeholder tokens,
// agent switches), which are checked here.
//
// Decision on names: handed-in names must look like ordinary variables and must not be
//   - a base variable (the launcher owns HOME, PATH, …; a caller must not repoint them),
//   - a loader or libc control (LD_*, GCONV_PATH, GLIBC_TUNABLES, MALLOC_*, …): they change
//     what code runs in every process of the sandbox, which an endpoint variable never needs,
//   - a proxy setting, unless it points at the run's own loopback port: S5 forbids the
//     daemon's proxy settings, but the run's CONNECT egress is reached as a proxy at
//     http://127.0.0.1:<port>. Credentials in it are allowed: where the endpoint sits on the
//     host's loopback (Seatbelt), every CONNECT carries the run's placeholder that way.

// BaseEnv returns the variables every sandboxed run gets, in a fixed order.
func BaseEnv() []string { return baseEnv(SandboxHome, SandboxTmp) }

// RunEnv is BaseEnv for a run whose interpreter lives in runtimeBin (Spec.RuntimeBin): that
// directory comes first on PATH, so the agent's "#!/usr/bin/env node" finds the interpreter
// the node resolved and checked, not an older system one. "" is BaseEnv.
func RunEnv(runtimeBin string) []string {
	env := BaseEnv()
	if runtimeBin == "" {
		return env
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + runtimeBin + ":" + SandboxPATH
		}
	}
	return env
}

// HostPathEnv is BaseEnv for a backend whose runs see host paths (Seatbelt: no mount
// namespace): the run's own home and tmp under its run dir, and the platform's PATH.
func HostPathEnv(home, tmp, path string) []string {
	env := baseEnv(home, tmp)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + path
		}
	}
	return env
}

// DirectEnv is BaseEnv with the operator's home and temp dir, which a direct run (P4) keeps.
func DirectEnv(home, tmp string) []string { return baseEnv(home, tmp) }

// baseEnv is BaseEnv with the given home and temp dir.
func baseEnv(home, tmp string) []string {
	return []string{
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TERM=dumb",
		"PATH=" + SandboxPATH,
		"HOME=" + home,
		"TMPDIR=" + tmp,
	}
}

// validEnvName accepts [A-Za-z_][A-Za-z0-9_]{0,127}.
func validEnvName(n string) bool {
	if len(n) == 0 || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

var reservedEnv = map[string]bool{
	"LANG": true, "LC_ALL": true, "TERM": true, "PATH": true, "HOME": true, "TMPDIR": true,
	"GCONV_PATH": true, "GLIBC_TUNABLES": true, "LOCPATH": true, "NLSPATH": true,
	"HOSTALIASES": true, "RES_OPTIONS": true, "LOCALDOMAIN": true, "TZDIR": true,
	"BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "PS4": true, "IFS": true,
	"PYTHONSTARTUP": true, "PYTHONPATH": true, "PERL5LIB": true, "PERL5OPT": true,
	"NODE_OPTIONS": true, "RUBYOPT": true, "JAVA_TOOL_OPTIONS": true,
	"XDG_RUNTIME_DIR": true, "DBUS_SESSION_BUS_ADDRESS": true, "SSH_AUTH_SOCK": true,
}

var proxyEnv = map[string]bool{
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "ALL_PROXY": true,
}

// ValidateEnvName reports why a handed-in variable name is refused, or nil.
func ValidateEnvName(name string) error {
	if !validEnvName(name) {
		return fmt.Errorf("env name %q: want [A-Za-z_][A-Za-z0-9_]*", name)
	}
	up := strings.ToUpper(name)
	switch {
	case reservedEnv[up]:
		return fmt.Errorf("env name %q: reserved (set by the launcher or controls the loader/shell)", name)
	case strings.HasPrefix(up, "LD_"), strings.HasPrefix(up, "MALLOC_"), strings.HasPrefix(up, "LC_"):
		return fmt.Errorf("env name %q: loader, allocator and locale controls are not handed in", name)
	}
	return nil
}

// ValidateEnv checks the handed-in "NAME=value" list: names (ValidateEnvName), no
// duplicates, no NUL, proxy variables only towards the run's own port.
func ValidateEnv(env []string, port int) error {
	seen := map[string]bool{}
	var errs []error
	for i, kv := range env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("env[%d]: want NAME=value", i))
			continue
		}
		if strings.IndexByte(val, 0) >= 0 {
			errs = append(errs, fmt.Errorf("env %s: value contains NUL", name))
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("env %s: duplicate", name))
		}
		seen[name] = true
		if proxyEnv[strings.ToUpper(name)] {
			if !loopbackProxy(val, port) {
				errs = append(errs, fmt.Errorf("env %s: a proxy may only be the run's own endpoint http://127.0.0.1:%d", name, port))
			}
			continue
		}
		if err := ValidateEnvName(name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loopbackProxy accepts http://[user[:password]@]127.0.0.1:port[/] and nothing else.
func loopbackProxy(val string, port int) bool {
	if port == 0 {
		return false
	}
	u, err := url.Parse(val)
	if err != nil {
		return false
	}
	return u.Scheme == "http" && u.Host == "127.0.0.1:"+strconv.Itoa(port) && u.Opaque == "" &&
		(u.Path == "" || u.Path == "/") && u.RawQuery == "" && !u.ForceQuery && u.Fragment == ""
}
