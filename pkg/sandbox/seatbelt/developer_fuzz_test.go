package seatbelt

import (
	"io/fs"
	"path/filepath"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// FuzzDeveloperDir: whatever the select link names and wherever its target resolves (both the
// operator's, or whoever set the link), the developer dir a run is opened to is the Command
// Line Tools' or a resolved candidate shaped like a developer dir that the profile may take as
// a parameter: a clean absolute path, not broad, not holding the operator's home (M1).
func FuzzDeveloperDir(f *testing.F) {
	for _, s := range [][3]string{
		{CommandLineTools, CommandLineTools, "/Users/op"},
		{XcodeDeveloperDir, XcodeDeveloperDir, "/Users/op"},
		{"../../Applications/Xcode-beta.app/Contents/Developer", "/Applications/Xcode-beta.app/Contents/Developer", "/Users/op"},
		{"/Users/op/Applications/Xcode.app/Contents/Developer", "/Users/op/Applications/Xcode.app/Contents/Developer", "/Users/op"},
		{"/", "/", "/Users/op"}, {"/Users", "/Users/.app/Contents/Developer", "/Users/op"},
		{"", "", ""}, {"x\"y.app/Contents/Developer", "/A/x\"y.app/Contents/Developer", "/Users/op"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, link, resolved, home string) {
		target := link
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(SelectLink), target)
		}
		readlink := func(p string) (string, error) {
			if p != SelectLink || link == "" {
				return "", fs.ErrNotExist
			}
			return link, nil
		}
		// The link's target resolves to the fuzzed path; Xcode's and the Command Line Tools'
		// dirs resolve to themselves.
		resolve := func(p string) (string, error) {
			switch p {
			case target:
				return resolved, nil
			case XcodeDeveloperDir, CommandLineTools:
				return p, nil
			}
			return "", fs.ErrNotExist
		}
		got := DeveloperDir(readlink, resolve, home)
		if got == CommandLineTools {
			return
		}
		if got != resolved && got != XcodeDeveloperDir {
			t.Fatalf("DeveloperDir(link %q → %q, home %q) = %q: not a candidate", link, resolved, home, got)
		}
		if !developerShaped(got) || checkPath(ParamDeveloperDir, got, home) != nil {
			t.Fatalf("DeveloperDir(link %q → %q, home %q) = %q: not a developer dir the profile may open (%v)", link, resolved, home, got, checkPath(ParamDeveloperDir, got, home))
		}
		if home != "" && sandbox.Within(home, got) {
			t.Fatalf("DeveloperDir = %q holds the operator's home %q", got, home)
		}
	})
}
