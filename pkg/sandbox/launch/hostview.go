package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"anet.dev/anet/pkg/sandbox"
)

// What a sandboxed run may see of the host (S3), whatever the backend: the host's system dirs
// read-only, and the agent's installation tree. Every backend exposes the same ones, so these
// rules live here, not in one backend.

// SystemDir is one host system directory as a run sees it: read-only, or, when the host has
// a symlink there (usrmerge: /bin -> usr/bin), the same symlink.
type SystemDir struct {
	Path string `json:"path"`
	Link string `json:"link,omitempty"`
}

// DefaultSystemDirs are the host dirs a run may see read-only when they exist (S3).
var DefaultSystemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// IsSystemDir reports whether p is one of DefaultSystemDirs.
func IsSystemDir(p string) bool { return slices.Contains(DefaultSystemDirs, p) }

// HostSystemDirs lists the DefaultSystemDirs present on this host, as dirs or as their
// symlinks.
func HostSystemDirs() []SystemDir {
	var out []SystemDir
	for _, d := range DefaultSystemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, err := os.Readlink(d)
			if err != nil {
				continue
			}
			out = append(out, SystemDir{Path: d, Link: t})
			continue
		}
		if fi.IsDir() {
			out = append(out, SystemDir{Path: d})
		}
	}
	return out
}

// ResolveAgent decides which host dir a run exposes for the agent ("" when none is needed),
// and the argv[0] to use inside: the realpath of the program, which must then lie in a
// system dir or in the exposed tree. The tree passes CheckAgentTree.
func ResolveAgent(spec sandbox.Spec) (tree, prog string, err error) {
	switch spec.Argv[0] {
	case sandbox.SandboxSelf, sandbox.SandboxInit:
		return "", spec.Argv[0], nil // anet-sandboxd or the run's init: the backend binds it there
	}
	prog, err = filepath.EvalSymlinks(spec.Argv[0])
	if err != nil {
		return "", "", fmt.Errorf("agent %s: %w", spec.Argv[0], err)
	}
	tree = spec.AgentTree
	if tree != "" {
		if tree, err = filepath.EvalSymlinks(tree); err != nil {
			return "", "", fmt.Errorf("agent tree %s: %w", spec.AgentTree, err)
		}
	} else {
		for _, d := range DefaultSystemDirs {
			if within(prog, d) {
				return "", prog, nil
			}
		}
		tree = filepath.Dir(prog)
	}
	if !within(prog, tree) {
		return "", "", fmt.Errorf("agent %s: not inside its tree %s", prog, tree)
	}
	if err := checkTreeOf(spec, tree); err != nil {
		return "", "", err
	}
	return tree, prog, nil
}

// checkTreeOf applies CheckAgentTree to tree with the operator's home and the spec's hidden
// dirs as real paths, as the tree itself is.
func checkTreeOf(spec sandbox.Spec, tree string) error {
	home, _ := os.UserHomeDir()
	if home != "" {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			home = h
		}
	}
	hidden := make([]string, 0, len(spec.Hidden))
	for _, h := range spec.Hidden {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			h = r
		}
		hidden = append(hidden, h)
	}
	return CheckAgentTree(tree, hidden, home)
}

// CheckAgentTree is sandbox.CheckAgentTree, the one rule every backend applies (S3, F3).
func CheckAgentTree(tree string, hidden []string, home string) error {
	return sandbox.CheckAgentTree(tree, hidden, home)
}

// Overlaps reports whether a and b are the same dir or one lies below the other.
func Overlaps(a, b string) bool { return within(a, b) || within(b, a) }

// within reports whether p is dir or below it.
func within(p, dir string) bool { return sandbox.Within(p, dir) }

// ResolveRuntime resolves the spec's interpreter tree and bin dir (Spec.RuntimeTree and
// RuntimeBin) to real paths and applies the agent tree's rule to the tree: the interpreter
// is bound as read-only as the agent, and may expose no more (S3, F3). Empty: none.
func ResolveRuntime(spec sandbox.Spec) (tree, bin string, err error) {
	if spec.RuntimeTree == "" {
		return "", "", nil
	}
	if tree, err = filepath.EvalSymlinks(spec.RuntimeTree); err != nil {
		return "", "", fmt.Errorf("agent runtime tree %s: %w", spec.RuntimeTree, err)
	}
	if bin, err = filepath.EvalSymlinks(spec.RuntimeBin); err != nil {
		return "", "", fmt.Errorf("agent runtime bin %s: %w", spec.RuntimeBin, err)
	}
	if !within(bin, tree) {
		return "", "", fmt.Errorf("agent runtime bin %s: not inside its tree %s", bin, tree)
	}
	if err := checkTreeOf(spec, tree); err != nil {
		return "", "", fmt.Errorf("agent runtime: %w", err)
	}
	return tree, bin, nil
}
