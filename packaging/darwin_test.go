package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/macho"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"anet.dev/anet/pkg/helperpath"
)

// darwinBuild is `make dist-darwin`, run once for the tests of this file.
var (
	darwinOnce sync.Once
	darwinDist string
	darwinErr  error
)

const darwinVersion = "1.2.3-test"

func distDarwin(t *testing.T) string {
	t.Helper()
	requireTool(t, "make", "make")
	darwinOnce.Do(func() {
		d, err := os.MkdirTemp("", "anet-dist-darwin-")
		if err != nil {
			darwinErr = err
			return
		}
		darwinDist = d
		cmd := exec.Command("make", "dist-darwin", "DIST="+d, "PKGVERSION="+darwinVersion)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			darwinErr = fmt.Errorf("make dist-darwin: %v\n%s", err, out)
		}
	})
	if darwinErr != nil {
		t.Fatal(darwinErr)
	}
	return darwinDist
}

// tarEntry is one file of a tarball.
type tarEntry struct {
	hdr  *tar.Header
	data []byte
}

func readTarball(t *testing.T, path string) map[string]tarEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	out := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = tarEntry{h, b}
	}
}

// M1, C4: one tarball per Mac architecture, with exactly the binaries (Mach-O for that
// architecture, executable), the man pages, the completions, the launchd agent and the
// licence, owned by root and laid out so that anetd finds its helpers in ../libexec/anet.
func TestDistDarwinM1(t *testing.T) {
	dist := distDarwin(t)
	wantCPU := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}
	binaries := []string{"bin/anet", "bin/anetd", "libexec/anet/anet-sandboxd", "libexec/anet/anet-egress"}
	others := map[string]string{ // file in the tarball → its source in the repository
		"share/man/man1/anet.1": "packaging/man/anet.1", "share/man/man8/anetd.8": "packaging/man/anetd.8",
		"share/man/man8/anet-sandboxd.8": "packaging/man/anet-sandboxd.8", "share/man/man8/anet-egress.8": "packaging/man/anet-egress.8",
		"share/anet/dev.anet.anetd.plist":           "packaging/launchd/dev.anet.anetd.plist",
		"share/zsh/site-functions/_anet":            "packaging/completions/_anet",
		"share/bash-completion/completions/anet":    "packaging/completions/anet.bash",
		"share/fish/vendor_completions.d/anet.fish": "packaging/completions/anet.fish",
		"README.md": "README.md", "LICENSE": "LICENSE", "NOTICE": "NOTICE",
	}
	for arch, cpu := range wantCPU {
		t.Run(arch, func(t *testing.T) {
			name := "anet-" + darwinVersion + "-darwin-" + arch
			entries := readTarball(t, filepath.Join(dist, name+".tar.gz"))
			var files []string
			for n, e := range entries {
				if e.hdr.Uid != 0 || e.hdr.Gid != 0 {
					t.Errorf("%s owned by %d:%d, want 0:0", n, e.hdr.Uid, e.hdr.Gid)
				}
				if !strings.HasPrefix(n, name+"/") {
					t.Errorf("%s is outside the tarball's top dir %s", n, name)
				}
				if e.hdr.Typeflag == tar.TypeReg {
					files = append(files, strings.TrimPrefix(n, name+"/"))
				}
			}
			var want []string
			want = append(want, binaries...)
			for f := range others {
				want = append(want, f)
			}
			sort.Strings(files)
			sort.Strings(want)
			if strings.Join(files, " ") != strings.Join(want, " ") {
				t.Fatalf("files = %v\nwant %v", files, want)
			}
			for _, b := range binaries {
				e := entries[name+"/"+b]
				if e.hdr.Mode&0o777 != 0o755 {
					t.Errorf("%s mode %o, want 755", b, e.hdr.Mode)
				}
				m, err := macho.NewFile(bytes.NewReader(e.data))
				if err != nil {
					t.Fatalf("%s is not Mach-O: %v", b, err)
				}
				if m.Cpu != cpu || m.Type != macho.TypeExec {
					t.Errorf("%s: cpu %v type %v, want %v executable", b, m.Cpu, m.Type, cpu)
				}
			}
			for f, src := range others {
				e := entries[name+"/"+f]
				if e.hdr.Mode&0o777 != 0o644 {
					t.Errorf("%s mode %o, want 644", f, e.hdr.Mode)
				}
				if want, err := os.ReadFile(filepath.Join(repoRoot(t), src)); err != nil || !bytes.Equal(e.data, want) {
					t.Errorf("%s differs from %s (%v)", f, src, err)
				}
			}
			// Unpacked, anetd's helper search finds the helpers (C4, O1).
			dir := t.TempDir()
			for _, b := range binaries {
				p := filepath.Join(dir, b)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, entries[name+"/"+b].data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			got, err := helperpath.Find(filepath.Join(dir, "bin", "anetd"), "")
			if err != nil || got != filepath.Join(dir, "libexec", "anet") {
				t.Fatalf("helper search from bin/anetd = %q, %v; want %s", got, err, filepath.Join(dir, "libexec", "anet"))
			}
		})
	}
}

// M1, C4: the launchd user agent is a well-formed property list (Go's XML decoder and
// Python's plistlib, the parser of the format's own family, both read it) and says what the
// systemd user unit says: start at login, restart on failure after 5 s, 30 s to stop, umask
// 0077, anetd from the tarball's bin with its log in the operator's Logs folder, and a PATH
// on which anetd finds Homebrew's agents.
func TestLaunchdAgentM1(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "packaging", "launchd", "dev.anet.anetd.plist"))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(src))
	dec.Strict = true
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the plist is not well-formed XML: %v", err)
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 (for plistlib) is needed: apt-get install python3: %v", err)
	}
	cmd := exec.Command(py, "-c", "import json, plistlib, sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))")
	cmd.Stdin = bytes.NewReader(src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("plistlib: %v\n%s", err, out)
	}
	var p struct {
		Label                string
		ProgramArguments     []string
		RunAtLoad            bool
		KeepAlive            map[string]bool
		ThrottleInterval     int
		ExitTimeOut          int
		Umask                int
		EnvironmentVariables map[string]string
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("plistlib output %s: %v", out, err)
	}
	if p.Label != "dev.anet.anetd" || !p.RunAtLoad || p.ThrottleInterval != 5 || p.ExitTimeOut != 30 || p.Umask != 0o077 {
		t.Errorf("plist = %+v, want label dev.anet.anetd, run at load, throttle 5, exit timeout 30, umask 63", p)
	}
	if ok, set := p.KeepAlive["SuccessfulExit"]; !set || ok {
		t.Errorf("KeepAlive = %v, want SuccessfulExit false (restart on failure only)", p.KeepAlive)
	}
	if len(p.ProgramArguments) != 3 || !strings.Contains(p.ProgramArguments[2], "exec /usr/local/bin/anetd 2>>\"$HOME/Library/Logs/anetd.log\"") {
		t.Errorf("ProgramArguments = %q, want anetd from /usr/local/bin with its log in ~/Library/Logs", p.ProgramArguments)
	}
	if path := p.EnvironmentVariables["PATH"]; !strings.HasPrefix(path, "/opt/homebrew/bin:/usr/local/bin:") {
		t.Errorf("PATH = %q, want Homebrew's prefixes first", path)
	}
	// The shell line really runs: with HOME in a temp dir and a stand-in anetd, it makes the
	// Logs folder and appends the program's stderr there.
	home := t.TempDir()
	line := strings.Replace(p.ProgramArguments[2], "/usr/local/bin/anetd", "/bin/sh -c 'echo started >&2'", 1)
	sh := exec.Command(p.ProgramArguments[0], p.ProgramArguments[1], line)
	sh.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the agent's command line: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(home, "Library", "Logs", "anetd.log")); err != nil || string(b) != "started\n" {
		t.Fatalf("log file = %q, %v; want the program's stderr", b, err)
	}
}
