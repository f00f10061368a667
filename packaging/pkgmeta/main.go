// Command pkgmeta makes what `make package` needs besides the binaries (C4):
//
//	pkgmeta version              the package version of the tree (see Version)
//	pkgmeta stage -out DIR -version V
//	                             writes DIR/changelog.Debian.gz, DIR/copyright and the
//	                             man pages compressed as DIR/man/<page>.gz
//
// It is a build tool run with `go run ./packaging/pkgmeta` from the repository root; it is
// not installed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Package facts that the changelog and the copyright file share with nfpm.yaml (a test
// checks that they agree).
const (
	packageName = "anet"
	maintainer  = "ANet maintainers <maintainers@anet.dev>"
	homepage    = "https://anet.dev/"
	// debRevision is the Debian revision of every build: the packaging lives with the code,
	// so a new package is a new upstream version.
	debRevision = "1"
)

// manPages are the pages under packaging/man that the package installs compressed.
var manPages = []string{"anet.1", "anetd.8", "anet-sandboxd.8", "anet-egress.8"}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pkgmeta:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: pkgmeta version | pkgmeta stage -out DIR -version V")
	}
	switch args[0] {
	case "version":
		t, err := readTree(".")
		if err != nil {
			return err
		}
		v, err := Version(t)
		if err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	case "stage":
		fs := flag.NewFlagSet("stage", flag.ContinueOnError)
		out := fs.String("out", "", "directory to write into")
		version := fs.String("version", "", "package version (pkgmeta version)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || *version == "" {
			return errors.New("stage: -out and -version are required")
		}
		return stage(".", *out, *version)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// stage writes the generated files of the package into out.
func stage(root, out, version string) error {
	if !validRE.MatchString(version) {
		return fmt.Errorf("stage: version %q is not a package version", version)
	}
	if err := os.MkdirAll(filepath.Join(out, "man"), 0o755); err != nil {
		return err
	}
	when, err := commitTime(root)
	if err != nil {
		return err
	}
	commit, err := gitOut(root, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return err
	}
	cl, err := gzipBest([]byte(Changelog(packageName, debVersion(version), maintainer, commit, when)))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "changelog.Debian.gz"), cl, 0o644); err != nil {
		return err
	}
	mods, err := linkedModules(root)
	if err != nil {
		return err
	}
	c, err := Copyright(root, mods, maintainer, homepage)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "copyright"), []byte(c), 0o644); err != nil {
		return err
	}
	for _, p := range manPages {
		b, err := os.ReadFile(filepath.Join(root, "packaging", "man", p))
		if err != nil {
			return err
		}
		z, err := gzipBest(b)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "man", p+".gz"), z, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// debVersion is the Version field of the .deb for a package version.
func debVersion(v string) string { return v + "-" + debRevision }
