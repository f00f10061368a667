// Package nodedirs places the node's directories by the XDG base directory variables. It
// links only the standard library: anet-sandboxd, which hides these directories from every
// run and keeps its probe cache in one (S3, S7), finds them without linking the configuration
// file's reader (pkg/config), which every `anet-sandboxd exec` would initialise for nothing.
// pkg/config builds the node's files (config.Paths) on these directories.
package nodedirs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Dirs are the node's directories. Every one ends in /anet.
type Dirs struct {
	Config  string // $XDG_CONFIG_HOME/anet
	Data    string // $XDG_DATA_HOME/anet: store, identity
	Runtime string // $XDG_RUNTIME_DIR/anet: control socket and token, run endpoints
	Cache   string // $XDG_CACHE_HOME/anet: work directories
}

// Default computes the directories from the XDG variables read through env (os.Getenv when
// nil), falling back to $HOME/.config, $HOME/.local/share and $HOME/.cache. Relative XDG
// values are ignored, as the XDG spec asks.
//
// Without XDG_RUNTIME_DIR (no login session, e.g. a container or a cron job) there is no
// per-user runtime directory, so Runtime falls back to <os.TempDir()>/anet-<uid>. The
// temporary directory is shared with every user: anyone could create that name first, so
// callers must create it with config.EnsurePrivateDir, which refuses a directory owned by
// another user or open to others rather than putting the control socket and token in it.
func Default(env func(string) string) (Dirs, error) {
	if env == nil {
		env = os.Getenv
	}
	home := env("HOME")
	xdg := func(name, fallback string) (string, error) {
		if v := env(name); filepath.IsAbs(v) {
			return filepath.Join(v, "anet"), nil
		}
		if !filepath.IsAbs(home) {
			return "", fmt.Errorf("default paths: %s is not set and HOME %q is not an absolute path", name, home)
		}
		return filepath.Join(home, fallback, "anet"), nil
	}
	var d Dirs
	var err error
	if d.Config, err = xdg("XDG_CONFIG_HOME", ".config"); err != nil {
		return Dirs{}, err
	}
	if d.Data, err = xdg("XDG_DATA_HOME", filepath.Join(".local", "share")); err != nil {
		return Dirs{}, err
	}
	if d.Cache, err = xdg("XDG_CACHE_HOME", ".cache"); err != nil {
		return Dirs{}, err
	}
	if v := env("XDG_RUNTIME_DIR"); filepath.IsAbs(v) {
		d.Runtime = filepath.Join(v, "anet")
	} else {
		d.Runtime = filepath.Join(os.TempDir(), "anet-"+strconv.Itoa(os.Getuid()))
	}
	return d, nil
}
