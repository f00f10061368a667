package bwrap_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
)

// requiredAttacks maps every attack the sandbox must stop to the requirement it proves. The battery
// itself (pkg/sandbox/attack) decides "blocked" only for the right errno or signal.
var requiredAttacks = map[string]string{
	"host_tcp": "S2,S7", "external_ip": "S2", "host_abstract": "S2,S7", "loopback": "S7",
	"runtime_socket": "S3,F3", "ssh_key": "S3", "control_token": "F3", "data_dir": "S3", "write_etc": "S3",
	"af_vsock": "S4", "af_vsock_highbits": "S4", "af_packet": "S4", "af_alg": "S4",
	"ptrace_pid1": "S4", "process_vm_readv_pid1": "S4",
	"mount": "S4", "umount2": "S4", "pivot_root": "S4", "fsopen": "S4", "open_tree": "S4", "clone3": "S4",
	"unshare_newuser": "S4,S7", "clone_newuser": "S4", "keyctl": "S4,S7", "add_key": "S4",
	"bpf": "S4", "perf_event_open": "S4", "io_uring_setup": "S4", "init_module": "S4", "userfaultfd": "S4",
	"tiocsti": "S4", "x32": "S4", "int80": "S4",
	"proc_status": "S4", "proc_pids": "S1", "hostname": "S1", "setuid_su": "S4",
}

// canaries opens the host-side targets: TCP and abstract listeners, a socket in
// $XDG_RUNTIME_DIR, a planted ~/.ssh/id_rsa, control token and data dir of the operator.
func (h *host) canaries() attack.Env {
	t := h.t
	env, err := attack.Env{}.WithHostFacts()
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	env.HostTCPPort = tcp.Addr().(*net.TCPAddr).Port
	env.AbstractName = "anet-test-" + uniqueSleep()
	abs, err := net.Listen("unix", "@"+env.AbstractName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { abs.Close() })
	env.RuntimeSocket = filepath.Join(h.runtime, "bus")
	rs, err := net.Listen("unix", env.RuntimeSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	env.SSHKeyPath = filepath.Join(h.home, ".ssh", "id_rsa")
	env.DataDir = filepath.Join(h.home, ".local", "share", "anet")
	env.ControlTokenPath = filepath.Join(h.runtime, "anet", "control.token")
	for _, f := range []string{env.SSHKeyPath, env.ControlTokenPath, filepath.Join(env.DataDir, "store.db")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("-----BEGIN OPENSSH PRIVATE KEY----- test canary\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// TestAttackBattery runs the whole battery from inside a real sandbox through `exec`, one
// subtest per attack, each failing unless the attack failed for the right reason.
func TestAttackBattery(t *testing.T) {
	h := newHost(t)
	env := h.canaries()
	var flags []string
	for _, kv := range env.Environ() {
		flags = append(flags, "--env", kv)
	}
	r := h.exec(h.bin, flags, h.bin, "attack", "--json", "all")
	var rep check.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("battery output %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	results := map[string]check.Check{}
	for _, c := range rep.Checks {
		results[c.Name] = c
	}
	for _, name := range attack.Names() {
		t.Run(name, func(t *testing.T) {
			res, ok := results[name]
			if !ok {
				t.Fatalf("attack %s: no result (exit %d, stderr %s)", name, r.code, r.stderr)
			}
			if !res.OK {
				t.Fatalf("attack %s (%s) = not blocked: %s", name, res.Requirement, res.Detail)
			}
			t.Logf("%s blocked: %s", name, res.Detail)
		})
	}
	t.Run("covers every required attack", func(t *testing.T) {
		for name := range requiredAttacks {
			if _, ok := results[name]; !ok {
				t.Errorf("required attack %q is not in the battery's results", name)
			}
		}
	})
	if r.code != 0 {
		t.Errorf("attack all exit = %d, want 0 when everything is blocked", r.code)
	}
}

// TestProbe: `probe --json` passes the five S7 properties on this host, with limits full,
// and says by which mechanism (S6): the harness delegates a cgroup v1 hierarchy.
func TestProbe(t *testing.T) {
	h := newHost(t)
	res, code := h.probe(h.bin, "")
	if code != 0 || !res.OK || res.Limits != sandbox.CgroupFull || res.Mechanism != "cgroup v1 delegated" {
		t.Fatalf("probe = exit %d %+v, want ok with limits full by cgroup v1 delegated", code, res)
	}
	want := []string{"loopback", "host_tcp", "host_abstract", "keyring", "userns"}
	for i, c := range res.Checks {
		if i >= len(want) || c.Name != want[i] || !c.OK {
			t.Fatalf("probe check %d = %+v, want %s ok", i, c, want[i])
		}
	}
}

// TestProbeWeakened: a test-only build with a protection off makes the probe fail with the
// right reason code (S7, F2). Release builds cannot be weakened (weaken_release.go).
func TestProbeWeakened(t *testing.T) {
	h := newHost(t)
	weak := testharness.Bin(t, "anet-sandboxd-weak")
	cases := []struct {
		weaken    string
		wantCode  reasons.Code
		wantCheck string
	}{
		{"net", reasons.NetnsFailed, "host_tcp"},
		{"omit:keyctl", reasons.SeccompFailed, "keyring"},
		{"seccomp,userns", reasons.SeccompFailed, "userns"},
	}
	for _, c := range cases {
		t.Run(c.weaken, func(t *testing.T) {
			res, code := h.probe(weak, c.weaken)
			if code == 0 || res.OK || res.Code != c.wantCode {
				t.Fatalf("weakened (%s) probe = exit %d ok %v code %q, want failure %s", c.weaken, code, res.OK, res.Code, c.wantCode)
			}
			for _, ch := range res.Checks {
				if ch.Name == c.wantCheck && !ch.OK {
					return
				}
			}
			t.Fatalf("weakened (%s) probe checks %+v: %s did not fail", c.weaken, res.Checks, c.wantCheck)
		})
	}
	// Unweakened, the test build passes: the failures above are the weakening's doing.
	if res, code := h.probe(weak, ""); code != 0 || !res.OK {
		t.Fatalf("test build without weakening: probe exit %d %+v, want ok", code, res)
	}
}

func (h *host) probe(bin, weaken string) (sandbox.ProbeResult, int) {
	h.t.Helper()
	r := h.run(bin, weaken, "probe", "--json")
	var res sandbox.ProbeResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		h.t.Fatalf("probe output %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	return res, r.code
}

// selfTest reads `self-test --json`: the shared check shape.
type selfTest struct {
	check.Report
	Limits string `json:"limits"`
}

// attacks returns the battery's checks by attack name.
func (s selfTest) attacks() map[string]check.Check {
	out := map[string]check.Check{}
	for _, c := range s.Checks {
		if name, ok := strings.CutPrefix(c.Name, "attack."); ok {
			out[name] = c
		}
	}
	return out
}

// TestSelfTest: `self-test` exits 0 on this host, and non-zero with a deliberately weakened
// configuration only a test build can produce, naming what is open (C4).
func TestSelfTest(t *testing.T) {
	h := newHost(t)
	r := h.run(h.bin, "", "self-test", "--json")
	var st selfTest
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("self-test output %q: %v (stderr %s)", r.stdout, err, r.stderr)
	}
	if r.code != 0 || !st.OK || len(st.attacks()) != len(attack.Names()) || len(st.Checks) != len(attack.Names())+5 || st.Limits != "full" {
		t.Fatalf("self-test = exit %d ok %v with %d attack results of %d checks, limits %q; want 0, true, %d attacks and 5 probe checks, full:\n%s",
			r.code, st.OK, len(st.attacks()), len(st.Checks), st.Limits, len(attack.Names()), r.stdout)
	}
	weak := testharness.Bin(t, "anet-sandboxd-weak")
	cases := []struct{ weaken, open string }{
		{"net", "host_tcp"},
		{"omit:socket", "af_vsock"},
		{"omit:arch", "int80"},
		{"omit:keyctl", "keyctl"},
		{"omit:clone3", "clone3"},
	}
	for _, c := range cases {
		t.Run(c.weaken, func(t *testing.T) {
			r := h.run(weak, c.weaken, "self-test", "--json")
			var st selfTest
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
				t.Fatalf("self-test output %q: %v (stderr %s)", r.stdout, err, r.stderr)
			}
			if r.code == 0 || st.OK {
				t.Fatalf("weakened (%s) self-test = exit %d ok %v, want a failure", c.weaken, r.code, st.OK)
			}
			a, ok := st.attacks()[c.open]
			if !ok {
				t.Fatalf("weakened (%s): no result for %s", c.weaken, c.open)
			}
			if a.OK {
				t.Fatalf("weakened (%s): %s still blocked (%s)", c.weaken, c.open, a.Detail)
			}
		})
	}
}

func (h *host) run(bin, weaken string, args ...string) result {
	h.t.Helper()
	saved := h.env
	defer func() { h.env = saved }()
	if weaken != "" {
		h.env = append(append([]string(nil), h.env...), "ANET_UNSAFE_TEST_WEAKEN="+weaken)
	}
	return h.command(bin, args...)
}
