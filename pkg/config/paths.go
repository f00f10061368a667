package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"anet.dev/anet/pkg/nodedirs"
)

// Paths are the node's files and directories. Every directory ends in /anet.
type Paths struct {
	ConfigDir  string // $XDG_CONFIG_HOME/anet
	ConfigFile string // ConfigDir/config.yaml
	KeysFile   string // ConfigDir/keys.yaml, or the config's keys_file (see WithConfig)
	DataDir    string // $XDG_DATA_HOME/anet: store, identity
	RuntimeDir string // $XDG_RUNTIME_DIR/anet: control socket and token, run endpoints
	CacheDir   string // $XDG_CACHE_HOME/anet: work directories
}

// DefaultPaths computes the paths on the node's directories (nodedirs.Default: the XDG
// variables read through env, os.Getenv when nil, with their fallbacks). Without
// XDG_RUNTIME_DIR the runtime directory is in the shared temporary directory, so callers
// must create it with EnsurePrivateDir.
func DefaultPaths(env func(string) string) (Paths, error) {
	d, err := nodedirs.Default(env)
	if err != nil {
		return Paths{}, err
	}
	p := Paths{ConfigDir: d.Config, DataDir: d.Data, RuntimeDir: d.Runtime, CacheDir: d.Cache}
	p.ConfigFile = filepath.Join(p.ConfigDir, "config.yaml")
	p.KeysFile = filepath.Join(p.ConfigDir, "keys.yaml")
	return p, nil
}

// WithConfig returns p with the keys file the configuration names, if it names one.
func (p Paths) WithConfig(c Config) Paths {
	if c.KeysFile != "" {
		p.KeysFile = filepath.Clean(c.KeysFile)
	}
	return p
}

// ModelsFile is the operator's models override (models, aliases and prices merged over the
// built-in list, K1), used when it exists.
func (p Paths) ModelsFile() string { return filepath.Join(p.ConfigDir, "models.yaml") }

// ControlSocket is the control socket's path.
func (p Paths) ControlSocket() string { return filepath.Join(p.RuntimeDir, "control.sock") }

// ControlToken is the control token's path.
func (p Paths) ControlToken() string { return filepath.Join(p.RuntimeDir, "control.token") }

// RunsDir holds one 0700 directory per run with its endpoint socket, made by anet-egress. It
// is inside the runtime dir, which no sandbox sees; each run gets only its own socket bound in.
func (p Paths) RunsDir() string { return filepath.Join(p.RuntimeDir, "runs") }

// RunSocket is the endpoint socket of run id.
func (p Paths) RunSocket(id string) string { return filepath.Join(p.RunsDir(), id, RunSocketName) }

// RunSocketName is the name of a run's endpoint socket in its run directory.
const RunSocketName = "endpoint.sock"

// SampleRunID has the form and the length of the run ids the node makes ("r", a UTC time,
// "-", 16 hex digits); the longest run socket is checked with it at start.
const SampleRunID = "r20060102T150405-0123456789abcdef"

// MaxSocketPath is sun_path's size minus the terminating NUL.
const MaxSocketPath = 107

// CheckSocketPath is the one socket-path rule, for the control socket, the run sockets
// anetd will ask for, and each one anet-egress opens: a unix socket address holds at most
// 107 bytes, and a longer path fails with a bare EINVAL at the worst moment (a run's start).
func CheckSocketPath(what, path string) error {
	if n := len(path); n > MaxSocketPath {
		return &PermError{Code: SocketPathTooLong, Path: path, Msg: fmt.Sprintf(
			"%s %s is %d bytes; unix sockets allow at most %d: set XDG_RUNTIME_DIR to a directory at least %d bytes shorter",
			what, path, n, MaxSocketPath, n-MaxSocketPath)}
	}
	return nil
}

// CheckSocketPaths checks, at start, the longest socket path the node will use: the control
// socket and a run's endpoint socket (runs dir, run id, socket name).
func (p Paths) CheckSocketPaths() error {
	if err := CheckSocketPath("control socket", p.ControlSocket()); err != nil {
		return err
	}
	return CheckSocketPath("run endpoint socket", p.RunSocket(SampleRunID))
}

// Store is the SQLite store's path.
func (p Paths) Store() string { return filepath.Join(p.DataDir, "anet.db") }

// IdentityKey is the node key's path.
func (p Paths) IdentityKey() string { return filepath.Join(p.DataDir, "identity.key") }

// WorkRoot is the root of unsandboxed runs' work directories: auto_reply.work_dir when set,
// else CacheDir/work (S3).
func (p Paths) WorkRoot(c Config) string {
	if c.AutoReply.WorkDir != "" {
		return filepath.Clean(c.AutoReply.WorkDir)
	}
	return filepath.Join(p.CacheDir, "work")
}

// RunLogs is the root of the runs' own logs, <peer>/<interaction>/<run>.log, kept as long
// as the work dirs (auto_reply.work_retention). No sandbox sees it.
func (p Paths) RunLogs() string { return filepath.Join(p.CacheDir, "run-logs") }

// SandboxWorkRoot is the root of sandboxed runs' work directories (S3).
func (p Paths) SandboxWorkRoot() string { return filepath.Join(p.CacheDir, "work-sandbox") }

// CheckWorkRoots refuses work roots that are equal or nested in each other (S3): whatever an
// untrusted peer's run leaves must never appear in a directory an unsandboxed agent starts in,
// and the reverse. Paths are compared as written and, where they exist, with symlinks resolved.
func (p Paths) CheckWorkRoots(c Config) error {
	work, sandbox := p.WorkRoot(c), p.SandboxWorkRoot()
	for _, w := range withResolved(work) {
		for _, s := range withResolved(sandbox) {
			if within(w, s) || within(s, w) {
				return &Error{Key: "auto_reply.work_dir", Msg: fmt.Sprintf(
					"the unsandboxed work root %s and the sandboxed work root %s overlap; they must not be nested in each other (S3)",
					work, sandbox)}
			}
		}
	}
	return nil
}

// withResolved returns path and, when it (or its deepest existing parent) resolves to
// something else, the resolved form.
func withResolved(path string) []string {
	out := []string{filepath.Clean(path)}
	dir, rest := filepath.Clean(path), ""
	for {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			r = filepath.Join(r, rest)
			if r != out[0] {
				out = append(out, r)
			}
			return out
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Resolve loads the node's configuration the way anetd and the CLI do: the default paths from
// env, the config file (configFile, or the default when empty; missing = defaults), the keys
// file override and the work-root check.
func Resolve(env func(string) string, configFile string) (Paths, Config, error) {
	p, err := DefaultPaths(env)
	if err != nil {
		return Paths{}, Config{}, err
	}
	if configFile != "" {
		abs, err := filepath.Abs(configFile)
		if err != nil {
			return Paths{}, Config{}, fmt.Errorf("config path: %w", err)
		}
		p.ConfigFile = abs
	}
	c, err := LoadFile(p.ConfigFile, configFile != "")
	if err != nil {
		return Paths{}, Config{}, err
	}
	p = p.WithConfig(c)
	if err := p.CheckWorkRoots(c); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.File = p.ConfigFile
		}
		return Paths{}, Config{}, err
	}
	return p, c, nil
}
