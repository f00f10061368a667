package helperpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout makes files under root: each path ending in "*" is an executable, others plain.
func layout(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, "*") {
			p, mode = strings.TrimSuffix(p, "*"), 0o755
		}
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFind (C4): the packaged layout (/usr/bin + /usr/libexec/anet), a build tree (all
// beside each other), a symlink to the daemon, an explicit --helper-dir that wins and is
// used alone, and the cases that must fail with every searched directory named.
func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    []string
		link     string // a symlink at this path points to usr/bin/anetd; self is the link
		self     string
		explicit string
		want     string // "" means ErrNotFound
	}{
		{name: "packaged", files: []string{"usr/bin/anetd*", "usr/libexec/anet/anet-sandboxd*", "usr/libexec/anet/anet-egress*"},
			self: "usr/bin/anetd", want: "usr/libexec/anet"},
		{name: "build tree", files: []string{"bin/anetd*", "bin/anet-sandboxd*", "bin/anet-egress*"},
			self: "bin/anetd", want: "bin"},
		{name: "beside wins over libexec", files: []string{"usr/bin/anetd*", "usr/bin/anet-sandboxd*", "usr/bin/anet-egress*",
			"usr/libexec/anet/anet-sandboxd*", "usr/libexec/anet/anet-egress*"}, self: "usr/bin/anetd", want: "usr/bin"},
		{name: "symlinked program resolves to the package", files: []string{"usr/bin/anetd*", "usr/libexec/anet/anet-sandboxd*", "usr/libexec/anet/anet-egress*"},
			link: "home/bin/anetd", self: "home/bin/anetd", want: "usr/libexec/anet"},
		{name: "explicit dir is used", files: []string{"usr/bin/anetd*", "opt/h/anet-sandboxd*", "opt/h/anet-egress*",
			"usr/libexec/anet/anet-sandboxd*", "usr/libexec/anet/anet-egress*"}, self: "usr/bin/anetd", explicit: "opt/h", want: "opt/h"},
		{name: "explicit dir is used alone", files: []string{"usr/bin/anetd*", "usr/libexec/anet/anet-sandboxd*", "usr/libexec/anet/anet-egress*"},
			self: "usr/bin/anetd", explicit: "opt/empty"},
		{name: "one helper beside, the other in libexec", files: []string{"usr/bin/anetd*", "usr/bin/anet-sandboxd*", "usr/libexec/anet/anet-egress*"},
			self: "usr/bin/anetd"},
		{name: "not executable", files: []string{"usr/bin/anetd*", "usr/libexec/anet/anet-sandboxd", "usr/libexec/anet/anet-egress*"},
			self: "usr/bin/anetd"},
		{name: "nothing", files: []string{"usr/bin/anetd*"}, self: "usr/bin/anetd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, tc.files...)
			if tc.link != "" {
				if err := os.MkdirAll(filepath.Join(root, filepath.Dir(tc.link)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(root, "usr/bin/anetd"), filepath.Join(root, tc.link)); err != nil {
					t.Fatal(err)
				}
			}
			explicit := ""
			if tc.explicit != "" {
				explicit = filepath.Join(root, tc.explicit)
			}
			got, err := Find(filepath.Join(root, tc.self), explicit)
			if tc.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find = %q, %v; want ErrNotFound", got, err)
				}
				for _, dir := range Candidates(filepath.Join(root, tc.self), explicit) {
					if !strings.Contains(err.Error(), filepath.Clean(dir)) {
						t.Errorf("error %q does not name the searched directory %s", err, filepath.Clean(dir))
					}
				}
				return
			}
			if err != nil || got != filepath.Join(root, tc.want) {
				t.Fatalf("Find = %q, %v; want %s", got, err, filepath.Join(root, tc.want))
			}
		})
	}
}
