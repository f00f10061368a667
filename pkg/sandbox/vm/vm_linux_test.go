package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/launch"
	"anet.dev/anet/pkg/sandbox/vm"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// TestVMAgentAnswersThroughEndpoint: an agent in the guest calls its model API at
// 127.0.0.1:P; the call crosses the link to the run's endpoint socket on the host, and the
// answer it writes to /work is the host's work dir (V1, E1). The endpoint here is a fake that
// records what reached it. Then the agent runs away on disk: the host polls the work share's
// growth, as for the bwrap backend, and stops the run with disk_limit; the answer stays (S6).
// One guest for both: each boot costs seconds under TCG.
func TestVMAgentAnswersThroughEndpoint(t *testing.T) {
	h := sharedHost(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "endpoint.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization") + " " + string(b)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"answer":"forty-two"}`))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	work := filepath.Join(dir, "work")
	script := `import json, os, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=b'{"q":"task"}',
    headers={"Authorization": "Bearer " + os.environ["ANTHROPIC_AUTH_TOKEN"], "Content-Type": "application/json"})
ans = json.load(urllib.request.urlopen(req, timeout=60))["answer"]
open("/work/answer.txt", "w").write(ans)
print("done", flush=True)
for n in range(8):  # files of 8 MiB: each under RLIMIT_FSIZE (the disk limit), all over it
    with open("/work/fill%d" % n, "wb") as f:
        for i in range(8):
            f.write(b"\0" * (1 << 20))
            f.flush()
time.sleep(600)
`
	res := h.run(t, sandbox.Spec{
		Argv:     []string{"/usr/bin/python3", "-c", "import time\n" + script},
		WorkRoot: work, WorkSub: "peer/i1",
		Endpoint: sock, Port: 8080,
		Env:    []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080", "ANTHROPIC_AUTH_TOKEN=placeholder-123"},
		Limits: sandbox.Limits{Disk: 16 << 20},
	})
	if res.out.Err != nil || res.out.Limit != sandbox.LimitDisk || res.out.Signal != int(syscall.SIGKILL) || res.stdout != "done\n" {
		t.Fatalf("outcome %+v, stdout %q, want disk_limit and SIGKILL after \"done\"\nstderr: %s", res.out, res.stdout, res.stderr)
	}
	select {
	case req := <-got:
		if req != `POST /v1/messages Bearer placeholder-123 {"q":"task"}` {
			t.Errorf("endpoint saw %q", req)
		}
	default:
		t.Fatal("nothing reached the endpoint")
	}
	b, err := os.ReadFile(filepath.Join(work, "peer", "i1", "answer.txt"))
	if err != nil || string(b) != "forty-two" {
		t.Fatalf("answer on the host = %q, %v", b, err)
	}
	t.Logf("agent run through the VM in %v", res.elapsed)
}

// TestVMSelfTestBatteryInsideGuest runs `anet-sandboxd self-test --isolation vm`: the probe's
// five checks plus the VM's two, and every attack of the battery, from inside a guest as the
// agent meets it (V1, V2, S1-S8). Two boots: the probe's and the battery's.
func TestVMSelfTestBatteryInsideGuest(t *testing.T) {
	needHost(t)
	bin := testharness.Bin(t, "anet-sandboxd")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "self-test", "--isolation", "vm", "--vm-allow-tcg", "--json")
	cmd.Env = testEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res launch.SelfTestReport
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("self-test output %q: %v (%v): %s", out, jerr, err, stderr.String())
	}
	attacks := 0
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("check %s failed inside the VM: %s %s", c.Name, c.Code, c.Detail)
		}
		if strings.HasPrefix(c.Name, "attack.") {
			attacks++
		}
	}
	for _, want := range []string{attack.CheckNetDevices, attack.CheckHostProcess, vm.CheckAccel, vm.CheckKernel} {
		if !hasCheck(res.Checks, "probe."+want) {
			t.Errorf("probe lacks a passing %s check", want)
		}
	}
	if !res.OK || err != nil || attacks < len(attack.Names()) {
		t.Fatalf("self-test ok=%v err=%v attacks=%d of %d", res.OK, err, attacks, len(attack.Names()))
	}
}

func hasCheck(cs []check.Check, name string) bool {
	for _, c := range cs {
		if c.Name == name && c.OK {
			return true
		}
	}
	return false
}

// testEnv is a host environment of the test's own (cache shared with the other tests so
// the guest kernel is extracted once).
func testEnv(t *testing.T) []string {
	home := t.TempDir()
	cache, _ := os.UserCacheDir()
	// Short: the self-test's canary socket goes in the runtime dir (sun_path is 108 bytes).
	rt, err := os.MkdirTemp("/tmp", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(rt) })
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "XDG_CACHE_HOME=" + cache,
		"XDG_RUNTIME_DIR=" + rt, "TMPDIR=" + rt, "LANG=C.UTF-8"}
}

// TestVMEndsWhenLauncherIsKilled: kill -9 of anet-sandboxd ends the VM (the bwrap wall's
// --die-with-parent and the launcher's death signal reach QEMU).
func TestVMEndsWhenLauncherIsKilled(t *testing.T) {
	needHost(t)
	bin := testharness.Bin(t, "anet-sandboxd")
	cmd := exec.Command(bin, "exec", "--isolation", "vm", "--vm-allow-tcg", "--", "/bin/sleep", "1000")
	cmd.Env = testEnv(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var qemus []int
	testkit.WaitWithin(t, "QEMU under anet-sandboxd", 3*time.Minute, func() bool {
		qemus = descendantsNamed(cmd.Process.Pid, "qemu-system-x86")
		return len(qemus) > 0
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	testkit.WaitFor(t, "QEMU gone after anet-sandboxd was killed", func() bool {
		for _, p := range qemus {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm"); err == nil && strings.HasPrefix(string(b), "qemu-system") {
				return false
			}
		}
		return true
	})
}

// descendantsNamed lists the processes below pid whose command name starts with prefix.
func descendantsNamed(pid int, prefix string) []int {
	parent := map[int]int{}
	comm := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		pp, _ := strconv.Atoi(f[1])
		parent[p] = pp
		comm[p] = s[strings.IndexByte(s, '(')+1 : i]
	}
	var out []int
	for p, c := range comm {
		if !strings.HasPrefix(c, prefix) {
			continue
		}
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

var registerOnce sync.Once

// TestVMBootTimeoutFailsClosed: a guest that does not come up in time is
// sandbox_start_failed with QEMU's side of the story, nothing of the agent runs, and no
// QEMU is left behind (V1, P2, F2).
func TestVMBootTimeoutFailsClosed(t *testing.T) {
	needHost(t)
	// The vm backend as registered, but with a boot timeout no guest meets: through the
	// seam, the Launcher's probe fails and nothing starts.
	const name = "vm-boot-timeout"
	registerOnce.Do(func() {
		launch.Register(name, func(o launch.Options) (launch.Backend, error) {
			wall, err := bwrap.New(bwrap.Config{Self: o.Self})
			if err != nil {
				return nil, err
			}
			return vm.New(vm.Config{Wall: wall, Self: o.Self, AllowTCG: true, BootTimeout: time.Second,
				Kernel: guestimage.KernelSource{CacheDir: o.CacheDir}})
		})
	})
	h, err := newVMHost(name)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	_, err = h.l.Start(context.Background(), sandbox.Spec{ID: "boot-timeout", Mode: sandbox.ModeSandbox,
		Argv: []string{"/bin/touch", "/work/ran"}, RunRoot: h.runRoot, WorkRoot: work, WorkSub: "w"}, sandbox.Stdio{})
	if sandbox.CodeOf(err) != reasons.SandboxStartFailed || !strings.Contains(err.Error(), "in time") {
		t.Fatalf("Start with a 1s boot timeout = %v, want %s saying the guest was not up in time", err, reasons.SandboxStartFailed)
	}
	if _, err := os.Stat(filepath.Join(work, "w", "ran")); err == nil {
		t.Fatal("the agent ran although the guest never came up")
	}
	testkit.WaitFor(t, "no QEMU left after the failed start", func() bool {
		return len(descendantsNamed(os.Getpid(), "qemu-system")) == 0
	})
	ents, _ := os.ReadDir(h.runRoot)
	for _, e := range ents {
		t.Errorf("left behind in the run root: %s", e.Name())
	}
}

// TestVMWallClockStopsTheAgent: the run's wall clock counts from the agent's start; the
// guest's init TERMs the agent through the link, and the outcome names the limit (S6, V1).
func TestVMWallClockStopsTheAgent(t *testing.T) {
	h := sharedHost(t)
	res := h.run(t, sandbox.Spec{Argv: []string{"/bin/sleep", "600"},
		Limits: sandbox.Limits{WallClock: 3 * time.Second, Grace: 5 * time.Second}})
	if res.out.Limit != sandbox.LimitWallClock || res.out.Signal != int(syscall.SIGTERM) {
		t.Fatalf("outcome %+v, want wall_clock and SIGTERM", res.out)
	}
}

// TestVMMemoryAndTaskLimitsInGuest: two of S6's limits, both applied inside one guest (one
// boot for both: each costs seconds under TCG). An allocation past the run's memory is
// killed by the agent's cgroup there before it holds the limit, and the outcome names
// memory_limit; forks past the task limit are refused with EAGAIN (S6, V1).
func TestVMMemoryAndTaskLimitsInGuest(t *testing.T) {
	h := sharedHost(t)
	const memory = 96 << 20
	script := fmt.Sprintf(`import errno, os, subprocess, sys, time
hog = "l = []\nwhile len(l) < %d:\n    l.append(b'x' * (8 << 20))\n    print(8 * len(l), flush=True)"
r = subprocess.run([sys.executable, "-c", hog], stdout=subprocess.PIPE, text=True)
print("hog", r.returncode, (r.stdout.split() or ["0"])[-1], flush=True)
kids = []
try:
    for i in range(40):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
    print("forked", len(kids), flush=True)
except OSError as e:
    print("fork refused after", len(kids), errno.errorcode[e.errno], flush=True)
for k in kids:
    os.kill(k, 9)
`, 4*memory/(8<<20))
	res := h.run(t, sandbox.Spec{Argv: []string{"/usr/bin/python3", "-c", script},
		Limits: sandbox.Limits{Memory: memory, Tasks: 16}})
	t.Logf("outcome %+v in %v; stdout %q", res.out, res.elapsed, res.stdout)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	var forked int
	var code string
	var status, gotMiB int
	if len(lines) != 2 {
		t.Fatalf("stdout %q (outcome %+v, stderr %q), want the hog's fate and the forks'", res.stdout, res.out, res.stderr)
	}
	// Killed below the agent's limit: the cgroup's doing, not the guest running out of RAM,
	// which is larger.
	if n, _ := fmt.Sscanf(lines[0], "hog %d %d", &status, &gotMiB); n != 2 || status != -9 || gotMiB >= memory>>20 {
		t.Errorf("hog: %q, want killed (-9) before it held %d MiB", lines[0], memory>>20)
	}
	if n, _ := fmt.Sscanf(lines[1], "fork refused after %d %s", &forked, &code); n != 2 || code != "EAGAIN" || forked >= 16 {
		t.Errorf("forks: %q, want refused with EAGAIN before 16 tasks", lines[1])
	}
	if res.out.Err != nil || res.out.Limit != sandbox.LimitMemory || res.out.ExitCode != 0 {
		t.Errorf("outcome %+v, want exit 0 with memory_limit", res.out)
	}
}

// TestVMRunFromAProbeCachedOnDisk: `anet-sandboxd exec` is a new process each time and finds
// the last passing probe on disk (S7); its vm backend has not probed, so it must take the
// accelerator that probe booted a guest with, not refuse with vm_no_accel (V1). Two Launchers
// with one probe cache stand for two processes: the second starts a run without a probe of
// its own.
func TestVMRunFromAProbeCachedOnDisk(t *testing.T) {
	h := sharedHost(t)
	dir := filepath.Join(t.TempDir(), "probe")
	open := func() *launch.Launcher {
		l, err := launch.New(launch.Options{Backend: vm.Name, Self: h.self, CacheDir: h.cache, AllowEmulation: true, ProbeCacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.StopAll)
		return l
	}
	ctx := context.Background()
	if res, err := open().Probe(ctx); err != nil || !res.OK || res.Cached {
		t.Fatalf("first process's probe: %v %+v, want a fresh pass", err, res)
	}
	next := open()
	if res, err := next.Probe(ctx); err != nil || !res.OK || !res.Cached {
		t.Fatalf("second process's probe: %v %+v, want the pass from disk", err, res)
	}
	var so, se bytes.Buffer
	r, err := next.Start(ctx, sandbox.Spec{ID: "cached-probe", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/echo", "ran"}, RunRoot: h.runRoot}, sandbox.Stdio{Stdout: &so, Stderr: &se})
	if err != nil {
		t.Fatalf("Start after a probe cached by another process: %v", err)
	}
	if o := r.Wait(); o.ExitCode != 0 || so.String() != "ran\n" {
		t.Fatalf("run %+v, stdout %q, stderr %s", o, so.String(), se.String())
	}
}

// TestAdoptProbeRefusesAnotherLink: a pass cached by another process vouches for the
// accelerator and the link its guest booted with; a result whose link is not the one this
// host would give that accelerator is refused, so the probe runs again (S7, V1).
func TestAdoptProbeRefusesAnotherLink(t *testing.T) {
	self := filepath.Join(testharness.BinDir(), "anet-sandboxd")
	wall, err := bwrap.New(bwrap.Config{Self: self})
	if err != nil {
		t.Fatal(err)
	}
	b, err := vm.New(vm.Config{Wall: wall, Self: self, AllowTCG: true, Kernel: guestimage.KernelSource{CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	pass := func(accel vm.Accel, link vm.Transport) sandbox.ProbeResult {
		return sandbox.ProbeResult{OK: true, Checks: []check.Check{
			check.Pass(vm.CheckAccel, "V1", string(accel)), check.Pass(vm.CheckTransport, "V1", string(link))}}
	}
	if err := b.AdoptProbe(pass(vm.AccelTCG, vm.TransportSerial)); err != nil || b.Accel() != vm.AccelTCG {
		t.Fatalf("AdoptProbe(tcg over serial) = %v, accel %q; want tcg adopted", err, b.Accel())
	}
	if err := b.AdoptProbe(pass(vm.AccelTCG, vm.TransportVsock)); err == nil {
		t.Fatal("AdoptProbe of a tcg guest booted over vsock succeeded; a TCG guest here gets serial")
	}
	if err := b.AdoptProbe(sandbox.ProbeResult{OK: true}); err == nil {
		t.Fatal("AdoptProbe of a result naming no accelerator succeeded")
	}
}
