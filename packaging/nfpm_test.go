package packaging

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// nfpmConfig is the part of nfpm's configuration these tests check.
type nfpmConfig struct {
	Name       string        `yaml:"name"`
	Arch       string        `yaml:"arch"`
	Version    string        `yaml:"version"`
	Depends    []string      `yaml:"depends"`
	Recommends []string      `yaml:"recommends"`
	Contents   []nfpmContent `yaml:"contents"`
	// Overrides could give deb and rpm other dependencies; the checks below read them too.
	Overrides map[string]struct {
		Depends []string `yaml:"depends"`
	} `yaml:"overrides"`
}

type nfpmContent struct {
	Src      string `yaml:"src"`
	Dst      string `yaml:"dst"`
	Type     string `yaml:"type"`
	Packager string `yaml:"packager"`
	FileInfo struct {
		Mode int `yaml:"mode"`
	} `yaml:"file_info"`
}

func loadNfpm(t *testing.T) nfpmConfig {
	t.Helper()
	var c nfpmConfig
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, "packaging/nfpm.yaml")))
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("parse packaging/nfpm.yaml: %v", err)
	}
	return c
}

// dstsFor returns the destinations packaged for one packager (deb or rpm), by source.
func (c nfpmConfig) dstsFor(packager string) map[string]nfpmContent {
	out := map[string]nfpmContent{}
	for _, e := range c.Contents {
		if e.Packager == "" || e.Packager == packager {
			out[e.Dst] = e
		}
	}
	return out
}

// staged are the files `pkgmeta stage` writes into PKGSTAGE.
var staged = []string{"changelog.Debian.gz", "copyright", "man/anet.1.gz", "man/anetd.8.gz", "man/anet-sandboxd.8.gz", "man/anet-egress.8.gz"}

// TestNfpmSourcesExist: every src of nfpm.yaml exists (C4), except the binaries, which
// `make package-bin` writes to PKGBIN and must then be programs the Makefile builds, and the
// generated files of PKGSTAGE.
func TestNfpmSourcesExist(t *testing.T) {
	c := loadNfpm(t)
	root := repoRoot(t)
	if len(c.Contents) == 0 {
		t.Fatal("nfpm.yaml has no contents")
	}
	for _, e := range c.Contents {
		t.Run(e.Src+"->"+e.Dst, func(t *testing.T) {
			if e.Type == "dir" {
				// A directory the package owns has no source.
				if e.Src != "" || !strings.HasSuffix(e.Dst, "/anet") {
					t.Fatalf("dir %s: want no src and a directory of this package's own (…/anet)", e.Dst)
				}
				return
			}
			if filepath.IsAbs(e.Src) || strings.Contains(e.Src, "..") {
				t.Fatalf("src %q must be relative to the repository root", e.Src)
			}
			if name, ok := strings.CutPrefix(e.Src, "${PKGBIN}/"); ok {
				if !slices.Contains(commands, name) {
					t.Fatalf("src %s: %s is not one of the programs make package-bin writes %v", e.Src, name, commands)
				}
				if _, err := os.Stat(filepath.Join(root, cmdPackage(name), "main.go")); err != nil {
					t.Fatalf("src %s: no %s/main.go to build it from: %v", e.Src, cmdPackage(name), err)
				}
				return
			}
			if gen, ok := strings.CutPrefix(e.Src, "${PKGSTAGE}/"); ok {
				// Written by pkgmeta stage: the changelog, the copyright file, the pages.
				if !slices.Contains(staged, gen) {
					t.Fatalf("src %s: pkgmeta stage writes no %s (it writes %v)", e.Src, gen, staged)
				}
				return
			}
			fi, err := os.Stat(filepath.Join(root, e.Src))
			if err != nil {
				t.Fatalf("src %s: %v", e.Src, err)
			}
			if !fi.Mode().IsRegular() {
				t.Fatalf("src %s is %v, want a regular file", e.Src, fi.Mode())
			}
		})
	}
}

// TestNfpmShipsEveryPackagingFile: no unit, man page or completion under packaging/ is
// forgotten by nfpm.yaml.
func TestNfpmShipsEveryPackagingFile(t *testing.T) {
	c := loadNfpm(t)
	srcs := map[string]bool{}
	for _, e := range c.Contents {
		srcs[e.Src] = true
		// The pages are shipped compressed from the stage directory.
		if page, ok := strings.CutPrefix(e.Src, "${PKGSTAGE}/man/"); ok {
			srcs["packaging/man/"+strings.TrimSuffix(page, ".gz")] = true
		}
	}
	root := repoRoot(t)
	for _, dir := range []string{"packaging/systemd", "packaging/man", "packaging/completions"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if !srcs[filepath.ToSlash(rel)] {
				t.Errorf("%s is not installed by packaging/nfpm.yaml", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
	}
}

// TestNfpmLayout: the package installs what C4 and the units need, for deb and rpm
// alike: anetd and anet on PATH, the helpers and the run init in /usr/libexec/anet (where the
// units' --helper-dir points), bubblewrap as a dependency (L1), and no AppArmor profile (A1: the
// operator installs it with anet doctor --apparmor-profile).
func TestNfpmLayout(t *testing.T) {
	c := loadNfpm(t)
	if c.Name != "anet" || c.Arch != "amd64" || c.Version != "${PKGVERSION}" {
		t.Errorf("name, arch, version = %q, %q, %q, want anet, amd64, ${PKGVERSION}", c.Name, c.Arch, c.Version)
	}
	want := map[string]string{
		"/usr/bin/anetd":                                 "${PKGBIN}/anetd",
		"/usr/bin/anet":                                  "${PKGBIN}/anet",
		"/usr/libexec/anet/anet-sandboxd":                "${PKGBIN}/anet-sandboxd",
		"/usr/libexec/anet/anet-egress":                  "${PKGBIN}/anet-egress",
		"/usr/libexec/anet/anet-runinit":                 "${PKGBIN}/anet-runinit",
		"/usr/lib/systemd/user/anetd.service":            "packaging/systemd/user/anetd.service",
		"/usr/lib/systemd/system/anetd@.service":         "packaging/systemd/system/anetd@.service",
		"/usr/share/man/man1/anet.1.gz":                  "${PKGSTAGE}/man/anet.1.gz",
		"/usr/share/man/man8/anetd.8.gz":                 "${PKGSTAGE}/man/anetd.8.gz",
		"/usr/share/man/man8/anet-sandboxd.8.gz":         "${PKGSTAGE}/man/anet-sandboxd.8.gz",
		"/usr/share/man/man8/anet-egress.8.gz":           "${PKGSTAGE}/man/anet-egress.8.gz",
		"/usr/share/doc/anet/copyright":                  "${PKGSTAGE}/copyright",
		"/usr/share/bash-completion/completions/anet":    "packaging/completions/anet.bash",
		"/usr/share/fish/vendor_completions.d/anet.fish": "packaging/completions/anet.fish",
		"/usr/share/doc/anet/README.md":                  "README.md",
	}
	zsh := map[string]string{"deb": "/usr/share/zsh/vendor-completions/_anet", "rpm": "/usr/share/zsh/site-functions/_anet"}
	only := map[string]map[string]string{
		"deb": {"/usr/share/doc/anet/changelog.Debian.gz": "${PKGSTAGE}/changelog.Debian.gz",
			"/usr/share/lintian/overrides/anet": "packaging/lintian-overrides"},
		"rpm": {"/usr/share/licenses/anet/LICENSE": "LICENSE"},
	}
	for _, packager := range []string{"deb", "rpm"} {
		t.Run(packager, func(t *testing.T) {
			got := c.dstsFor(packager)
			w := map[string]string{zsh[packager]: "packaging/completions/_anet"}
			for k, v := range only[packager] {
				w[k] = v
			}
			for k, v := range want {
				w[k] = v
			}
			for dst, src := range w {
				e, ok := got[dst]
				if !ok {
					t.Errorf("%s: nothing installed at %s, want %s", packager, dst, src)
					continue
				}
				if e.Src != src {
					t.Errorf("%s: %s from %s, want from %s", packager, dst, e.Src, src)
				}
				wantMode := 0o644
				if strings.HasPrefix(src, "${PKGBIN}/") {
					wantMode = 0o755
				}
				if e.FileInfo.Mode != wantMode {
					t.Errorf("%s: %s mode = %#o, want %#o", packager, dst, e.FileInfo.Mode, wantMode)
				}
			}
			for dst := range got {
				if strings.HasPrefix(dst, "/etc/apparmor.d") {
					t.Errorf("%s: installs %s; the AppArmor profile is the operator's to install (A1)", packager, dst)
				}
			}
			deps := append(append([]string{}, c.Depends...), c.Overrides[packager].Depends...)
			if !slices.ContainsFunc(deps, func(d string) bool { return strings.Fields(d)[0] == "bubblewrap" }) {
				t.Errorf("%s: depends = %v, want bubblewrap (L1)", packager, deps)
			}
			if !slices.Contains(c.Recommends, "qemu-system-x86") {
				t.Errorf("%s: recommends = %v, want qemu-system-x86 for the vm backend (V1)", packager, c.Recommends)
			}
		})
	}
}
