package attack

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/sandbox/seccomp"
)

// filteredEnv makes the re-executed test binary install seccomp filters and run attacks.
const filteredEnv = "ANET_ATTACK_TEST_FILTERED"

func TestMain(m *testing.M) {
	// The child protocol, exactly as anet-sandboxd's attack subcommand implements it.
	if len(os.Args) == 4 && os.Args[1] == "attack" && os.Args[2] == ChildFlag {
		os.Exit(ChildMain(os.Args[3], os.Stdout))
	}
	if spec := os.Getenv(filteredEnv); spec != "" {
		os.Exit(filteredChild(spec))
	}
	os.Exit(m.Run())
}

// filteredChild installs the filters named by spec ("all" or "omit:a,b") and prints one
// JSON Result per attack named in ANET_ATTACK_TEST_NAMES.
func filteredChild(spec string) int {
	progs, err := childFilters(spec)
	if err == nil {
		err = seccomp.Install(progs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	enc := json.NewEncoder(os.Stdout)
	for _, n := range strings.Fields(os.Getenv("ANET_ATTACK_TEST_NAMES")) {
		enc.Encode(Run(n, Env{}))
	}
	return 0
}

// runFiltered runs names in a child under the filters given by spec.
func runFiltered(t *testing.T, spec string, names []string) map[string]Result {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), filteredEnv+"="+spec, "ANET_ATTACK_TEST_NAMES="+strings.Join(names, " "))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("filtered child (%s): %v; stderr: %s", spec, err, stderr.String())
	}
	res := map[string]Result{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("filtered child line %q: %v", sc.Text(), err)
		}
		res[r.Name] = r
	}
	return res
}

var reqPattern = regexp.MustCompile(`^[A-Z][0-9]+(,[A-Z][0-9]+)*$`)

// TestNames: the battery covers every attack, in a fixed order, each with the
// requirement it proves.
func TestNames(t *testing.T) {
	names := Names()
	if !reflect.DeepEqual(names, Names()) {
		t.Fatalf("Names() changed between calls")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("Names() lists %q twice", n)
		}
		seen[n] = true
		if req := Requirement(n); !reqPattern.MatchString(req) {
			t.Errorf("Requirement(%q) = %q, want requirement numbers like S4 or S2,S7", n, req)
		}
	}
	for _, want := range []string{
		"loopback", "host_tcp", "external_ip", "host_abstract", "runtime_socket", "ssh_key",
		"control_token", "data_dir", "write_etc", "af_vsock", "af_packet", "af_alg", "af_netlink",
		"ptrace_pid1", "process_vm_readv_pid1", "proc1_environ", "mount", "umount2", "pivot_root", "fsopen",
		"open_tree", "clone3", "unshare_newuser", "clone_newuser", "keyctl", "add_key", "bpf",
		"perf_event_open", "io_uring_setup", "init_module", "userfaultfd", "tiocsti",
		"tiocsti_highbits", "x32", "int80", "proc_status", "setuid_su", "proc_pids", "hostname",
	} {
		if !seen[want] {
			t.Errorf("Names() lacks %q", want)
		}
	}
	if r := Run("no_such_attack", Env{}); r.Blocked || r.How != "unknown" {
		t.Errorf("Run(no_such_attack) = %+v, want Blocked=false How=unknown", r)
	}
}

func TestEnvRoundTrip(t *testing.T) {
	in := Env{HostTCPPort: 4242, ExternalAddr: "192.0.2.1:443", AbstractName: "anet-canary-x",
		RuntimeSocket: "/run/user/1000/bus", SSHKeyPath: "/home/op/.ssh/id_rsa", ControlTokenPath: "/run/user/1000/anet/token",
		DataDir: "/home/op/.local/share/anet", HostHostname: "host", HostPidNS: "pid:[4026531836]", Timeout: 3 * time.Second}
	vars := map[string]string{}
	for _, kv := range in.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	out, err := FromEnviron(func(k string) string { return vars[k] })
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("FromEnviron(Environ(%+v)) = %+v, %v", in, out, err)
	}
	for _, c := range []struct{ name, key, val string }{
		{"bad_port", envHostTCPPort, "http"},
		{"port_range", envHostTCPPort, "70000"},
		{"bad_timeout", envTimeout, "-1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromEnviron(func(k string) string {
				if k == c.key {
					return c.val
				}
				return ""
			})
			if err == nil || !strings.Contains(err.Error(), c.key) {
				t.Errorf("FromEnviron(%s=%s) error = %v, want one naming %s", c.key, c.val, err, c.key)
			}
		})
	}
}

func TestExpectErrno(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		blocked bool
		how     string
	}{
		{"success", nil, false, "succeeded"},
		{"wanted", syscall.EPERM, true, "EPERM"},
		{"wrapped", &os.PathError{Op: "open", Path: "/x", Err: syscall.EPERM}, true, "EPERM"},
		{"other_errno", syscall.EINVAL, false, "EINVAL"},
		{"no_errno", errors.New("i/o timeout"), false, "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := expectErrno("op", c.err, syscall.EPERM)
			if r.Blocked != c.blocked || r.How != c.how {
				t.Errorf("expectErrno(%v) = %v/%s, want %v/%s", c.err, r.Blocked, r.How, c.blocked, c.how)
			}
		})
	}
}

func TestJudgeChild(t *testing.T) {
	signaled := func(s syscall.Signal) syscall.WaitStatus { return syscall.WaitStatus(s) }
	for _, c := range []struct {
		name, attack string
		rep          childReport
		ws           syscall.WaitStatus
		blocked      bool
		how          string
	}{
		{"x32_killed", "x32", childReport{}, signaled(syscall.SIGSYS), true, "signal SIGSYS"},
		{"x32_enosys", "x32", childReport{Errno: "ENOSYS"}, 0, true, "ENOSYS"},
		{"x32_ran", "x32", childReport{}, 0, false, "succeeded"},
		{"x32_segv", "x32", childReport{}, signaled(syscall.SIGSEGV), false, "signal SIGSEGV"},
		{"int80_killed", "int80", childReport{}, signaled(syscall.SIGSYS), true, "signal SIGSYS"},
		{"int80_errno_reached_kernel", "int80", childReport{Errno: "EPERM"}, 0, false, "EPERM"},
		{"tiocsti_eperm", "tiocsti", childReport{Errno: "EPERM"}, 0, true, "EPERM"},
		{"tiocsti_eio", "tiocsti", childReport{Errno: "EIO"}, 0, false, "EIO"},
		{"tiocsti_injected", "tiocsti", childReport{}, 0, false, "succeeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := judgeChild(c.attack, c.rep, c.ws)
			if r.Blocked != c.blocked || r.How != c.how {
				t.Errorf("judgeChild(%s, %+v, %v) = %v/%s, want %v/%s", c.attack, c.rep, c.ws, r.Blocked, r.How, c.blocked, c.how)
			}
		})
	}
}

// hostCanaries sets up on this unsandboxed host what the launcher sets up for a run.
func hostCanaries(t *testing.T) Env {
	t.Helper()
	env, err := Env{}.WithHostFacts()
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("canary listen: %v", err)
	}
	t.Cleanup(func() { tcp.Close() })
	env.HostTCPPort = tcp.Addr().(*net.TCPAddr).Port
	env.AbstractName = fmt.Sprintf("anet-attack-test-%d", os.Getpid())
	abs, err := net.Listen("unix", "@"+env.AbstractName)
	if err != nil {
		t.Fatalf("abstract canary: %v", err)
	}
	t.Cleanup(func() { abs.Close() })
	dir := t.TempDir()
	env.RuntimeSocket = filepath.Join(dir, "bus")
	rs, err := net.Listen("unix", env.RuntimeSocket)
	if err != nil {
		t.Fatalf("runtime socket canary: %v", err)
	}
	t.Cleanup(func() { rs.Close() })
	for _, l := range []net.Listener{tcp, abs, rs} {
		testkit.Serve(l, func(net.Conn) {})
	}
	env.SSHKeyPath = filepath.Join(dir, "id_rsa")
	env.ControlTokenPath = filepath.Join(dir, "token")
	env.DataDir = filepath.Join(dir, "data")
	for _, p := range []string{env.SSHKeyPath, env.ControlTokenPath} {
		if err := os.WriteFile(p, []byte("planted\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(env.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return env
}

// TestHostHolesDetected runs attacks on this host, outside any sandbox, where each of them
// works: the battery must report every one as not blocked, or it could not notice a hole in
// the sandbox either. (Attacks that could harm an unsandboxed host, or that root and non-root
// answer differently, are left to the launcher's in-sandbox tests.)
func TestHostHolesDetected(t *testing.T) {
	if _, err := os.Stat("/dev/vsock"); err != nil {
		t.Fatalf("this host has no /dev/vsock (%v): af_vsock cannot be shown to detect a hole here", err)
	}
	env := hostCanaries(t)
	for _, name := range []string{
		"host_tcp", "host_abstract", "runtime_socket", "ssh_key", "control_token", "data_dir",
		"af_vsock", "af_vsock_highbits", "af_netlink", "keyctl", "add_key", "clone3",
		"unshare_newuser", "clone_newuser", "userfaultfd", "perf_event_open", "io_uring_setup",
		"fsopen", "open_tree", "tiocsti", "tiocsti_highbits", "int80", "proc_status", "proc_pids", "hostname",
	} {
		t.Run(name, func(t *testing.T) {
			r := Run(name, env)
			t.Logf("%s: %s (%s)", name, r.How, r.Detail)
			if r.Blocked {
				t.Errorf("Run(%s) on the open host = blocked (%s: %s), want not blocked", name, r.How, r.Detail)
			}
			if r.How == "not configured" || r.How == "error" || r.How == "unknown" {
				t.Errorf("Run(%s) on the open host = %s (%s), want a real attempt", name, r.How, r.Detail)
			}
		})
	}
	// Positive checks that hold on any host.
	if r := Run("loopback", env); !r.Blocked || r.How != "ok" {
		t.Errorf("Run(loopback) = %+v, want ok", r)
	}
}

// TestNotConfigured: a missing canary is a failure, never a silent pass.
func TestNotConfigured(t *testing.T) {
	for _, name := range []string{"host_tcp", "host_abstract", "runtime_socket", "ssh_key", "control_token", "data_dir", "proc_pids", "hostname"} {
		t.Run(name, func(t *testing.T) {
			if r := Run(name, Env{}); r.Blocked || r.How != "not configured" {
				t.Errorf("Run(%s, Env{}) = %v/%s, want not blocked, not configured", name, r.Blocked, r.How)
			}
		})
	}
}

// underFilters lists the syscall attacks and the reason each must give when only the
// seccomp filters (no bwrap) stand in the way (S4). ptrace_pid1 is left out: here pid 1 is
// the host's init.
var underFilters = map[string]string{
	"af_vsock": "EAFNOSUPPORT", "af_vsock_highbits": "EAFNOSUPPORT", "af_packet": "EAFNOSUPPORT",
	"af_alg": "EAFNOSUPPORT", "af_netlink": "EAFNOSUPPORT",
	"process_vm_readv_pid1": "EPERM", "mount": "EPERM", "umount2": "EPERM", "pivot_root": "EPERM",
	"fsopen": "ENOSYS", "open_tree": "ENOSYS", "clone3": "ENOSYS",
	"unshare_newuser": "EPERM", "clone_newuser": "EPERM", "keyctl": "EPERM", "add_key": "EPERM",
	"bpf": "EPERM", "perf_event_open": "EPERM", "io_uring_setup": "EPERM", "init_module": "EPERM",
	"userfaultfd": "EPERM", "tiocsti": "EPERM", "tiocsti_highbits": "EPERM",
	"x32": foreignABI, "int80": foreignABI,
}

// foreignABI is how x32 and int 0x80 end: killed on x86_64, absent elsewhere.
var foreignABI = map[bool]string{true: "signal SIGSYS", false: "not applicable"}[runtime.GOARCH == "amd64"]

// TestAttacksUnderFilters installs the real seccomp programs in a re-executed child and runs
// the syscall attacks there: each must be blocked for the filter's reason (S4).
func TestAttacksUnderFilters(t *testing.T) {
	var names []string
	for n := range underFilters {
		names = append(names, n)
	}
	res := runFiltered(t, "all", names)
	for n, want := range underFilters {
		t.Run(n, func(t *testing.T) {
			r, ok := res[n]
			if !ok {
				t.Fatalf("no result for %s", n)
			}
			if !r.Blocked || r.How != want {
				t.Errorf("Run(%s) under filters = %v/%s (%s), want blocked/%s", n, r.Blocked, r.How, r.Detail, want)
			}
		})
	}
}
