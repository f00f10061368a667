package bwrap

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// update rewrites the golden file. The harness runs tests in a copy of this dir as another
// user, so -update only works when run as an ordinary user (not root) from the source tree.
var update = flag.Bool("update", false, "rewrite golden files")

func goldenSpec() sandbox.Spec {
	return sandbox.Spec{
		ID: "r1", Mode: sandbox.ModeSandbox, Argv: []string{"/opt/agent/bin/agent", "-p", "task"},
		RunRoot: "/c/runs", WorkRoot: "/c/work-sandbox", WorkSub: "aid/i1",
		Endpoint: "/rt/anet/r1/endpoint.sock", Port: 8080,
		Env:    []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080"},
		Hidden: []string{"/d/anet", "/cfg/anet", "/rt/anet"},
	}
}

func goldenHost() launch.HostPaths {
	return launch.HostPaths{Prog: "/opt/agent/bin/agent", AgentTree: "/opt/agent", Endpoint: "/rt/anet/r1/endpoint.sock"}
}

func goldenLayout() Layout {
	return Layout{
		SystemDirs: []launch.SystemDir{{Path: "/usr"}, {Path: "/etc"}, {Path: "/bin", Link: "usr/bin"}, {Path: "/lib64", Link: "usr/lib64"}},
		Home:       "/c/runs/r1/home", Tmp: "/c/runs/r1/tmp", Work: "/c/work-sandbox/aid/i1",
		Init: "/usr/libexec/anet/anet-runinit", Self: "/usr/libexec/anet/anet-sandboxd",
		SeccompFDs: []int{3, 4}, EnvFD: 5, StatusFD: 6, HoldFD: 7, FileSize: 4096, Hostname: "anet-run",
	}
}

// argsOf is Args of the golden spec, host paths and layout as mutate changes them: the plan
// is made as a start makes it (its checks are launch.NewPlan's), then rendered.
func argsOf(mutate func(*sandbox.Spec, *launch.HostPaths, *Layout)) ([]string, error) {
	s, h, l := goldenSpec(), goldenHost(), goldenLayout()
	if mutate != nil {
		mutate(&s, &h, &l)
	}
	p, err := launch.NewPlan(s, h)
	if err != nil {
		return nil, err
	}
	return Args(p, l)
}

// TestArgsGolden pins the whole bwrap argv (S1 namespaces, S3 file system,
// S4 caps/seccomp, S5 env). Run with -update after a deliberate change, and review the diff.
func TestArgsGolden(t *testing.T) {
	args, err := argsOf(nil)
	if err != nil {
		t.Fatalf("Args = %v", err)
	}
	got := strings.Join(args, "\n") + "\n"
	path := filepath.Join("testdata", "args.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update once): %v", err)
	}
	if got != string(want) {
		t.Fatalf("Args(golden) differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestArgsAlwaysHardened: the flags S1–S5 require are present in every argv, and
// nothing of the host's /run, /tmp, /home, /root, /var is bound.
func TestArgsAlwaysHardened(t *testing.T) {
	args, err := argsOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	joined := " " + strings.Join(args, " ") + " "
	for _, f := range []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--unshare-cgroup", "--unshare-net", "--disable-userns", "--new-session", "--die-with-parent",
		"--cap-drop ALL", "--clearenv", "--proc /proc", "--dev /dev", "--as-pid-1",
		"--add-seccomp-fd 3", "--add-seccomp-fd 4", "--chdir /work", "--remount-ro /"} {
		if !strings.Contains(joined, " "+f+" ") {
			t.Errorf("Args lacks %q", f)
		}
	}
	for i, a := range args {
		if a != "--bind" && a != "--ro-bind" || i+1 >= len(args) {
			continue
		}
		src := args[i+1]
		for _, bad := range []string{"/run", "/var", "/tmp", "/home", "/root", "/rt/anet", "/d/anet", "/cfg/anet"} {
			if src == bad {
				t.Errorf("Args binds host %s", src)
			}
		}
	}
	if i := strings.Index(joined, " -- "); i < 0 || strings.Contains(joined[:i], "ANTHROPIC") {
		t.Errorf("handed-in env appears in bwrap's argv; it must go through the env fd: %s", joined)
	}
}

// TestArgsBindsSelfOnlyForItsOwnRuns: a run sees anet-sandboxd only when it is the run's
// program (self-test's battery); every run gets its init, and the gate's flags go to init,
// before the agent's argv (S3, S7).
func TestArgsBindsSelfOnlyForItsOwnRuns(t *testing.T) {
	binds := func(args []string, dst string) bool {
		for i := 0; i+2 < len(args); i++ {
			if args[i] == "--ro-bind" && args[i+2] == dst {
				return true
			}
		}
		return false
	}
	args, err := argsOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	if binds(args, sandbox.SandboxSelf) || !binds(args, sandbox.SandboxInit) {
		t.Fatalf("an agent's run: binds anet-sandboxd %v, init %v; want only init", binds(args, sandbox.SandboxSelf), binds(args, sandbox.SandboxInit))
	}
	if args, err = argsOf(func(s *sandbox.Spec, h *launch.HostPaths, l *Layout) {
		s.Argv = []string{sandbox.SandboxSelf, "attack", "--json"}
		h.Prog, h.AgentTree = sandbox.SandboxSelf, ""
		l.Gate = []string{"--gate", "10,11", "--gate-targets", "{}"}
	}); err != nil {
		t.Fatal(err)
	}
	if !binds(args, sandbox.SandboxSelf) {
		t.Fatalf("a run of anet-sandboxd itself does not bind it: %q", args)
	}
	want := " -- " + sandbox.SandboxInit + " --endpoint " + sandbox.SandboxEndpoint + " --port 8080 --env-file " + sandbox.SandboxEnvFile +
		" --hold 7 --fsize 4096 --gate 10,11 --gate-targets {} -- " + sandbox.SandboxSelf + " attack --json"
	if joined := strings.Join(args, " "); !strings.HasSuffix(joined, want) {
		t.Fatalf("bwrap's argv %q, want it to end %q", joined, want)
	}
}

// TestArgsBindsRuntime (E10, S3, S5): an agent interpreter outside the system dirs is bound
// read-only at its own path and its bin dir comes first on the run's PATH, so the agent's
// "#!/usr/bin/env node" finds it; without one, PATH is the fixed sandbox PATH.
func TestArgsBindsRuntime(t *testing.T) {
	setenvPath := func(args []string) string {
		for i := 0; i+2 < len(args); i++ {
			if args[i] == "--setenv" && args[i+1] == "PATH" {
				return args[i+2]
			}
		}
		return ""
	}
	args, err := argsOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := setenvPath(args); got != sandbox.SandboxPATH {
		t.Fatalf("PATH without a runtime = %q, want %q", got, sandbox.SandboxPATH)
	}
	const tree, bin = "/home/op/.nvm/versions/node/v24.21.0", "/home/op/.nvm/versions/node/v24.21.0/bin"
	if args, err = argsOf(func(s *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
		s.RuntimeTree, s.RuntimeBin = tree, bin
		h.RuntimeTree, h.RuntimeBin = tree, bin
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := setenvPath(args), bin+":"+sandbox.SandboxPATH; got != want {
		t.Errorf("PATH with a runtime = %q, want %q", got, want)
	}
	if j := " " + strings.Join(args, " ") + " "; !strings.Contains(j, " --ro-bind "+tree+" "+tree+" ") {
		t.Errorf("Args does not bind the runtime tree read-only at its own path: %s", j)
	}
}

// TestArgsRefuses: a run's plan or layout that breaks a rule is refused, naming it. The
// plan's rules (mode, trees, endpoint) are checked once, when it is made (launch.NewPlan, as
// launch.Prepare does for a start); the layout's by Args.
func TestArgsRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*sandbox.Spec, *launch.HostPaths, *Layout)
		want   string
	}{
		{"no seccomp", func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) { l.SeccompFDs = nil }, "seccomp"},
		{"direct mode", func(s *sandbox.Spec, _ *launch.HostPaths, _ *Layout) { s.Mode, s.WorkRoot = sandbox.ModeDirect, "/w" }, "not sandboxed"},
		{"agent tree is data dir", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
			h.Prog, h.AgentTree = "/d/anet/bin/agent", "/d/anet/bin"
		}, "agent tree"},
		{"program outside its tree", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) { h.Prog = "/srv/agent" }, "not inside its tree"},
		{"runtime bin outside its tree", func(s *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
			s.RuntimeTree, s.RuntimeBin = "/home/op/node", "/home/op/node/bin"
			h.RuntimeTree, h.RuntimeBin = "/home/op/node", "/usr/bin"
		}, "runtime bin"},
		{"runtime bin without a tree", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) { h.RuntimeBin = "/home/op/node/bin" }, "runtime bin"},
		{"runtime tree too broad", func(s *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
			s.RuntimeTree, s.RuntimeBin = "/home", "/home/op/bin"
			h.RuntimeTree, h.RuntimeBin = "/home", "/home/op/bin"
		}, "runtime"},
		{"runtime tree is config dir", func(s *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
			s.RuntimeTree, s.RuntimeBin = "/cfg/anet", "/cfg/anet/bin"
			h.RuntimeTree, h.RuntimeBin = "/cfg/anet", "/cfg/anet/bin"
		}, "runtime"},
		{"agent tree contains runtime dir", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) { h.Prog, h.AgentTree = "/rt/agent", "/rt" }, "top-level"},
		{"agent tree contains config", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) { h.AgentTree = "/cfg/anet/.." }, "clean"},
		{"bad hostname", func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) { l.Hostname = "a b" }, "hostname"},
		{"endpoint mismatch", func(_ *sandbox.Spec, h *launch.HostPaths, _ *Layout) { h.Endpoint = "" }, "endpoint"},
		{"not a system dir", func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) {
			l.SystemDirs = append(l.SystemDirs, launch.SystemDir{Path: "/home"})
		}, "system dir"},
		{"relative home", func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) { l.Home = "home" }, "home"},
		{"host loopback endpoint", func(s *sandbox.Spec, h *launch.HostPaths, _ *Layout) {
			s.Endpoint, s.EndpointAddr, h.Endpoint = "", "127.0.0.1:"+strconv.Itoa(s.Port), ""
		}, "endpoint_addr"},
		{"no init", func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) { l.Init = "" }, "init"},
		{"self run without self", func(s *sandbox.Spec, h *launch.HostPaths, l *Layout) {
			s.Argv[0], h.Prog, h.AgentTree, l.Self = sandbox.SandboxSelf, sandbox.SandboxSelf, "", ""
		}, "self"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := argsOf(c.mutate)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Args = %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

// TestWallIsANamedDifference: QEMU's wall (V1) adds only read-only binds under /run/anet and
// the KVM devices to an agent's argv; anything else is refused.
func TestWallIsANamedDifference(t *testing.T) {
	base, err := argsOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	args, err := argsOf(func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) {
		l.Wall = Wall{Devices: []string{"/dev/kvm"}, Binds: []Bind{{Src: "/c/vm/vmlinux", Dst: "/run/anet/vmlinux"}}}
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := strings.Join(args, " ")
	for _, want := range []string{"--ro-bind /c/vm/vmlinux /run/anet/vmlinux", "--dev-bind /dev/kvm /dev/kvm"} {
		if !strings.Contains(extra, want) {
			t.Errorf("wall argv lacks %q", want)
		}
	}
	if len(args) != len(base)+6 {
		t.Errorf("wall argv has %d more arguments than an agent's, want 6", len(args)-len(base))
	}
	for name, w := range map[string]Wall{
		"host device":     {Devices: []string{"/dev/vsock"}},
		"bind outside":    {Binds: []Bind{{Src: "/c/x", Dst: "/etc/x"}}},
		"bind over self":  {Binds: []Bind{{Src: "/c/x", Dst: sandbox.SandboxSelf}}},
		"hidden source":   {Binds: []Bind{{Src: "/d/anet/store.db", Dst: "/run/anet/x"}}},
		"relative source": {Binds: []Bind{{Src: "c/x", Dst: "/run/anet/x"}}},
	} {
		if _, err := argsOf(func(_ *sandbox.Spec, _ *launch.HostPaths, l *Layout) { l.Wall = w }); err == nil {
			t.Errorf("%s: Args accepted wall %+v", name, w)
		}
	}
}
