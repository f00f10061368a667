package boundaries

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func deps(t *testing.T, pkg string, tags ...string) map[string]bool {
	t.Helper()
	args := []string{"list", "-deps"}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, pkg)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		m[l] = true
	}
	return m
}

// Who may link what. The keys reader and the model proxy live only in anet-egress; the
// process that forks agents links no HTTP stack (it relays bytes, it never speaks HTTP).
func TestImportBoundaries(t *testing.T) {
	for _, tc := range []struct {
		binary    string
		forbidden []string
	}{
		{"anet.dev/anet/cmd/anetd", []string{"anet.dev/anet/pkg/keys", "anet.dev/anet/pkg/modelproxy", "anet.dev/anet/pkg/endpoint"}},
		// The CLI serves no metrics: the exposition library stays in anetd.
		{"anet.dev/anet/cmd/anet", []string{"anet.dev/anet/pkg/keys", "anet.dev/anet/pkg/store", "anet.dev/anet/pkg/modelproxy",
			"anet.dev/anet/pkg/metrics", "github.com/prometheus/client_golang/prometheus"}},
		// Nor, since exec initialises every package it links once per command, the
		// configuration file's reader (the node's dirs come from pkg/nodedirs) or a cpio
		// library (the vm backend writes its initramfs itself,
		// pkg/sandbox/vm/guestimage/newc.go).
		{"anet.dev/anet/cmd/anet-sandboxd", []string{"anet.dev/anet/pkg/keys", "net/http", "anet.dev/anet/pkg/modelproxy", "anet.dev/anet/pkg/store",
			"anet.dev/anet/pkg/config", "gopkg.in/yaml.v3", "github.com/u-root/u-root/pkg/cpio", "github.com/dustin/go-humanize"}},
	} {
		for _, tags := range [][]string{nil, {"anettest"}} {
			t.Run(filepath.Base(tc.binary)+"/"+strings.Join(tags, ","), func(t *testing.T) {
				d := deps(t, tc.binary, tags...)
				if len(d) < 10 {
					t.Fatalf("go list -deps %s gave %d packages: the check would prove nothing", tc.binary, len(d))
				}
				for _, f := range tc.forbidden {
					if d[f] {
						t.Errorf("%s links %s", tc.binary, f)
					}
				}
			})
		}
	}
	if !deps(t, "anet.dev/anet/cmd/anet-egress")["anet.dev/anet/pkg/keys"] {
		t.Error("anet-egress does not link pkg/keys: the keys are read somewhere else")
	}
}

// anet-runinit is pid 1 of every run: it runs inside the sandbox beside the agent, and every
// launch waits for it to start. It links none of the node's secrets or HTTP, none of the code
// that builds sandboxes, and none of the packages whose start-up made anet-sandboxd slow to
// start (the CLI framework, the seccomp compiler, YAML) (C3, E1). Of the probe folded into the
// run (S7) it links only its own half, pkg/sandbox/gate/inside: not the launcher's (canaries,
// judge, the probe result of pkg/sandbox), nor the crypto, big numbers and URLs those pull in.
func TestRunInitLinksOnlyWhatRunsInside(t *testing.T) {
	const bin = "anet.dev/anet/cmd/anet-sandboxd/anet-runinit"
	for _, tags := range [][]string{nil, {"anettest"}} {
		t.Run(strings.Join(tags, ","), func(t *testing.T) {
			d := deps(t, bin, tags...)
			if !d["anet.dev/anet/pkg/sandbox/runinit"] || !d["anet.dev/anet/pkg/sandbox/gate/inside"] {
				t.Fatalf("go list -deps %s lacks runinit or the gate's inside: the check would prove nothing", bin)
			}
			for _, f := range []string{"testing", "net/http", "anet.dev/anet/pkg/keys", "anet.dev/anet/pkg/modelproxy",
				"anet.dev/anet/pkg/store", "anet.dev/anet/pkg/sandbox/launch", "anet.dev/anet/pkg/sandbox/bwrap",
				"anet.dev/anet/pkg/sandbox/gate", "anet.dev/anet/pkg/sandbox", "math/big", "net/url",
				"github.com/urfave/cli/v2", "github.com/elastic/go-seccomp-bpf", "gopkg.in/yaml.v3"} {
				if d[f] {
					t.Errorf("anet-runinit links %s", f)
				}
			}
			var crypto []string
			for p := range d {
				if p == "crypto" || strings.HasPrefix(p, "crypto/") {
					crypto = append(crypto, p)
				}
			}
			if len(crypto) > 0 {
				sort.Strings(crypto)
				t.Errorf("anet-runinit links %s", strings.Join(crypto, " "))
			}
		})
	}
}

// The sandbox seam (docs/architecture.md rule 1): anetd and the CLI link the spec (pkg/sandbox) and
// the seam's client (pkg/sandbox/remote), never the code that starts processes
// (pkg/sandbox/launch and every backend below pkg/sandbox). A new backend is caught here
// without naming it: only the listed sub-packages are allowed.
func TestSandboxSeamBoundary(t *testing.T) {
	allowed := map[string]bool{
		"anet.dev/anet/pkg/sandbox":        true, // the spec: data and validation
		"anet.dev/anet/pkg/sandbox/remote": true, // the Launcher over the privsep socket
		"anet.dev/anet/pkg/sandbox/memfd":  true, // the run's output files
	}
	for _, bin := range []string{"anet.dev/anet/cmd/anetd", "anet.dev/anet/cmd/anet"} {
		for _, tags := range [][]string{nil, {"anettest"}, {"noautoreply"}} {
			t.Run(filepath.Base(bin)+"/"+strings.Join(tags, ","), func(t *testing.T) {
				for p := range deps(t, bin, tags...) {
					if strings.HasPrefix(p, "anet.dev/anet/pkg/sandbox/") && !allowed[p] {
						t.Errorf("%s links %s, which starts processes (only anet-sandboxd may)", bin, p)
					}
				}
			})
		}
	}
	if !deps(t, "anet.dev/anet/cmd/anetd")["anet.dev/anet/pkg/sandbox/remote"] {
		t.Error("anetd does not link pkg/sandbox/remote: it reaches the sandbox some other way")
	}
	// The micro-VM backend (V1) and the libraries only it needs stay out of anetd too: its
	// reason codes, which anetd shows, live in pkg/reasons for that reason.
	for _, tags := range [][]string{nil, {"anettest"}} {
		d := deps(t, "anet.dev/anet/cmd/anetd", tags...)
		for _, p := range []string{"anet.dev/anet/pkg/sandbox/vm", "github.com/hashicorp/yamux", "github.com/mdlayher/vsock", "github.com/u-root/u-root/pkg/cpio"} {
			if d[p] {
				t.Errorf("anetd (tags %v) links %s, the vm backend's", tags, p)
			}
		}
	}
	sd := deps(t, "anet.dev/anet/cmd/anet-sandboxd")
	for _, p := range []string{"anet.dev/anet/pkg/sandbox/launch", "anet.dev/anet/pkg/sandbox/remote", "anet.dev/anet/pkg/sandbox/bwrap", "anet.dev/anet/pkg/sandbox/vm"} {
		if !sd[p] {
			t.Errorf("anet-sandboxd (linux) does not link %s", p)
		}
	}
	// A build without a backend is what a platform without one gets (O1).
	nb := deps(t, "anet.dev/anet/cmd/anet-sandboxd", "nobackend")
	for _, p := range []string{"anet.dev/anet/pkg/sandbox/bwrap", "anet.dev/anet/pkg/sandbox/vm"} {
		if nb[p] {
			t.Errorf("anet-sandboxd built with nobackend still links %s", p)
		}
	}
}

// The model proxy dials its upstream through pkg/dialer alone, not through the CONNECT
// egress package (which holds the tunnel's rules and state).
func TestModelProxyDoesNotLinkEgress(t *testing.T) {
	if deps(t, "anet.dev/anet/pkg/modelproxy")["anet.dev/anet/pkg/egress"] {
		t.Error("pkg/modelproxy links pkg/egress")
	}
}

// The model proxy's layers point down: the JSON codec, the key's type and the dialer link
// nothing of the project; the rules and the metering hold no key and dial nothing; and the
// proxy carries its key without linking the keys file's reader or the configuration (F3).
func TestModelProxyLayersPointDown(t *testing.T) {
	const m = "anet.dev/anet/pkg/"
	for _, tc := range []struct {
		pkg       string
		forbidden []string // "" forbids every package of the project
	}{
		{m + "modelproxy/jsontree", []string{""}},
		{m + "secret", []string{""}},
		{m + "dialer", []string{""}},
		{m + "modelproxy/rules", []string{m + "secret", m + "keys", m + "dialer", m + "modelproxy/metering", m + "modelproxy"}},
		{m + "modelproxy/metering", []string{m + "secret", m + "keys", m + "dialer", m + "modelproxy"}},
		{m + "modelproxy", []string{m + "keys", m + "config"}},
	} {
		for d := range deps(t, tc.pkg) {
			if d == tc.pkg {
				continue
			}
			for _, f := range tc.forbidden {
				if (f == "" && strings.HasPrefix(d, "anet.dev/anet/")) || (f != "" && d == f) {
					t.Errorf("%s links %s", tc.pkg, d)
				}
			}
		}
	}
}

// The anettest hooks (redirecting model hosts to loopback fakes, weakened sandboxes) exist
// only in test builds: the release binaries carry none of their symbols.
func TestReleaseBinariesHaveNoTestHooks(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ cmd, symbol string }{
		{"anet-egress", "ANET_TEST_REDIRECTS"},
		{"anet-sandboxd", "ANET_UNSAFE_TEST_WEAKEN"},
		{"anetd", "ANET_TEST_WALL_EVERY"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			for _, build := range []struct {
				tags      string
				wantHooks bool
			}{{"", false}, {"anettest", true}} {
				bin := filepath.Join(dir, tc.cmd+"-"+build.tags)
				args := []string{"build", "-o", bin}
				if build.tags != "" {
					args = append(args, "-tags", build.tags)
				}
				args = append(args, "anet.dev/anet/cmd/"+tc.cmd)
				if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, out)
				}
				// Function names live in the binary's pclntab and strings in its data:
				// either way the bytes are there when the hook is compiled in.
				data, err := os.ReadFile(bin)
				if err != nil {
					t.Fatal(err)
				}
				has := bytes.Contains(data, []byte(tc.symbol))
				if has != build.wantHooks {
					t.Errorf("%s built with tags %q: symbol %s present = %v, want %v", tc.cmd, build.tags, tc.symbol, has, build.wantHooks)
				}
			}
		})
	}
}
