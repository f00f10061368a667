// Package helperpath finds the node's helper programs, anet-sandboxd and anet-egress, the
// same way for every program that starts or runs them (anetd, and anet doctor's probe), so
// that a packaged anetd started by hand finds what `anet doctor` finds (C4).
//
// The search, for a program whose resolved path is /P/bin/anetd:
//
//  1. an explicit directory (anetd --helper-dir), used alone: an operator who names a
//     directory means that one, not a program that happens to lie elsewhere;
//  2. beside the program (/P/bin): a build tree or `go install`;
//  3. ../libexec/anet relative to it (/P/libexec/anet): the packaged layout.
//
// A directory is chosen only if it holds both helpers as executable files.
package helperpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The helper programs.
const (
	Sandboxd = "anet-sandboxd"
	Egress   = "anet-egress"
	// RunInit is every run's pid 1. anet-sandboxd finds it beside itself (a missing one is
	// the probe's no_run_init, with its fix), so the search here does not ask for it.
	RunInit = "anet-runinit"
)

// ErrNotFound is returned when no searched directory holds both helpers.
var ErrNotFound = errors.New("helper binaries not found")

// Candidates are the directories searched, in order, for a program at self (already
// resolved) and an explicit directory ("" when none was given).
func Candidates(self, explicit string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	dir := filepath.Dir(self)
	return []string{dir, filepath.Join(dir, "..", "libexec", "anet")}
}

// Find returns the directory holding both helpers for a program at self.
func Find(self, explicit string) (string, error) {
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	var tried []string
	for _, dir := range Candidates(self, explicit) {
		dir = filepath.Clean(dir)
		if holdsBoth(dir) {
			return dir, nil
		}
		tried = append(tried, dir)
	}
	return "", fmt.Errorf("%w: no %s and %s in %s (install them beside %s or in ../libexec/anet, or pass --helper-dir)",
		ErrNotFound, Sandboxd, Egress, strings.Join(tried, ", "), filepath.Base(self))
}

// ForThisProgram is Find for the running program.
func ForThisProgram(explicit string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find helper binaries: %w", err)
	}
	return Find(self, explicit)
}

func holdsBoth(dir string) bool {
	for _, name := range []string{Sandboxd, Egress} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// Env is the whole environment every helper starts with, before what each one is given by
// name: a fixed PATH (not the operator's) and a UTF-8 locale. `anet doctor` and the checks of
// anetd --check run the helpers with it too, so that they see what the running helpers see
// (a bwrap only on the operator's PATH is not one anet-sandboxd finds).
func Env() []string { return []string{"PATH=" + PATH, "LANG=C.UTF-8"} }

// PATH is the helpers' search path.
const PATH = "/usr/local/bin:/usr/bin:/bin"
