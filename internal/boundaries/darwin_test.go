package boundaries

import (
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// depsFor is deps for another platform.
func depsFor(t *testing.T, goos, pkg string, tags ...string) map[string]bool {
	t.Helper()
	return depsOn(t, goos, "arm64", pkg, tags...)
}

// depsOn is deps for goos/goarch.
func depsOn(t *testing.T, goos, goarch, pkg string, tags ...string) map[string]bool {
	t.Helper()
	args := []string{"list", "-deps"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("GOOS=%s GOARCH=%s go %s: %v\n%s", goos, goarch, strings.Join(args, " "), err, out)
	}
	m := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		m[l] = true
	}
	return m
}

// M1, O1: on macOS anet-sandboxd's backend is Seatbelt (never bwrap), it still links no
// HTTP stack, no keys and no store, and a build without backends has none, as on Linux.
// anetd links no backend there either.
func TestDarwinSandboxdBoundaryM1(t *testing.T) {
	for _, tags := range [][]string{nil, {"anettest"}} {
		d := depsFor(t, "darwin", "anet.dev/anet/cmd/anet-sandboxd", tags...)
		if len(d) < 10 {
			t.Fatalf("go list gave %d packages: the check would prove nothing", len(d))
		}
		if !d["anet.dev/anet/pkg/sandbox/seatbelt"] || d["anet.dev/anet/pkg/sandbox/bwrap"] {
			t.Errorf("anet-sandboxd on darwin (tags %v): seatbelt linked %v, bwrap linked %v; want seatbelt only", tags, d["anet.dev/anet/pkg/sandbox/seatbelt"], d["anet.dev/anet/pkg/sandbox/bwrap"])
		}
		for _, f := range []string{"net/http", "anet.dev/anet/pkg/keys", "anet.dev/anet/pkg/modelproxy", "anet.dev/anet/pkg/store"} {
			if d[f] {
				t.Errorf("anet-sandboxd on darwin links %s", f)
			}
		}
	}
	if depsFor(t, "darwin", "anet.dev/anet/cmd/anet-sandboxd", "nobackend")["anet.dev/anet/pkg/sandbox/seatbelt"] {
		t.Error("anet-sandboxd built for darwin with nobackend still links seatbelt")
	}
	for p := range depsFor(t, "darwin", "anet.dev/anet/cmd/anetd") {
		if p == "anet.dev/anet/pkg/sandbox/seatbelt" || p == "anet.dev/anet/pkg/sandbox/launch" {
			t.Errorf("anetd on darwin links %s, which starts processes", p)
		}
	}
}

// M1: the Seatbelt self-check's private libSystem calls (sandbox_check, __proc_info) are found
// with dlsym when asked for, never bound at load: dyld refuses to start a program that
// imports a symbol the system does not export, so a macOS that dropped one of them would
// break anet-sandboxd altogether rather than fail one self-check item. The release build, as
// make dist-darwin cross-compiles it, is read back as Mach-O for both Mac architectures.
func TestDarwinSandboxdImportsNoPrivateSymbolM1(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		bin := filepath.Join(t.TempDir(), "anet-sandboxd")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "anet.dev/anet/cmd/anet-sandboxd")
		cmd.Env = append(os.Environ(), "GOOS=darwin", "GOARCH="+arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GOOS=darwin GOARCH=%s go build anet-sandboxd: %v\n%s", arch, err, out)
		}
		f, err := macho.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		syms, err := f.ImportedSymbols()
		f.Close()
		if err != nil {
			t.Fatalf("%s: imported symbols: %v", arch, err)
		}
		got := map[string]bool{}
		for _, s := range syms {
			got[s] = true
		}
		// dlsym and ptsname are the package's own load-time imports: their presence shows
		// the read sees them.
		for _, want := range []string{"_dlsym", "_ptsname"} {
			if !got[want] {
				t.Errorf("darwin/%s anet-sandboxd does not import %s (of %d imports): the check reads the wrong table", arch, want, len(syms))
			}
		}
		for _, private := range []string{"_sandbox_check", "___proc_info", "_SANDBOX_CHECK_NO_REPORT"} {
			if got[private] {
				t.Errorf("darwin/%s anet-sandboxd imports %s at load: dyld would refuse to start it on a macOS without it", arch, private)
			}
		}
	}
}
