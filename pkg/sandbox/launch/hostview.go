package launch

import (
	"os"
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

// CheckAgentTree is sandbox.CheckAgentTree, the one rule every backend applies (S3, F3).
func CheckAgentTree(tree string, hidden []string, home string) error {
	return sandbox.CheckAgentTree(tree, hidden, home)
}

// Overlaps reports whether a and b are the same dir or one lies below the other.
func Overlaps(a, b string) bool { return within(a, b) || within(b, a) }

// within reports whether p is dir or below it.
func within(p, dir string) bool { return sandbox.Within(p, dir) }
