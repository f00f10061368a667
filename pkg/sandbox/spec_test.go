package sandbox

import (
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/check"
)

func validSpec() Spec {
	return Spec{
		ID: "run-1", Mode: ModeSandbox, Argv: []string{"/usr/bin/agent", "-p"},
		RunRoot: "/var/cache/anet/runs", WorkRoot: "/var/cache/anet/work-sandbox", WorkSub: "aid/inter",
		Endpoint: "/run/user/1/anet/r/endpoint.sock", Port: 8080,
		Env: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:8080", "HTTPS_PROXY=http://127.0.0.1:8080"},
	}
}

// TestSpecValidate: bad input gets an error naming the field (S3, S5).
func TestSpecValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Spec)
		want   string // substring of the error; "" = valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"id with slash", func(s *Spec) { s.ID = "a/b" }, "id"},
		{"id dot-dot", func(s *Spec) { s.ID = "a..b" }, "id"},
		{"unknown mode", func(s *Spec) { s.Mode = "vm" }, "mode"},
		{"relative program", func(s *Spec) { s.Argv = []string{"agent"} }, "argv"},
		{"NUL in argv", func(s *Spec) { s.Argv = []string{"/a", "x\x00y"} }, "argv[1]"},
		{"unclean endpoint", func(s *Spec) { s.Endpoint = "/run/../etc/x" }, "endpoint"},
		{"relative run root", func(s *Spec) { s.RunRoot = "runs" }, "run_root"},
		{"work sub escapes", func(s *Spec) { s.WorkSub = "aid/../../etc" }, "work_sub"},
		{"work sub absolute", func(s *Spec) { s.WorkSub = "/etc" }, "work_sub"},
		{"work sub without root", func(s *Spec) { s.WorkRoot = "" }, "work_sub"},
		{"endpoint without port", func(s *Spec) { s.Port = 0 }, "port"},
		{"runtime tree and bin", func(s *Spec) { s.RuntimeTree, s.RuntimeBin = "/opt/node", "/opt/node/bin" }, ""},
		{"runtime bin outside its tree", func(s *Spec) { s.RuntimeTree, s.RuntimeBin = "/opt/node", "/usr/bin" }, "runtime_bin"},
		{"runtime tree without bin", func(s *Spec) { s.RuntimeTree = "/opt/node" }, "runtime_bin"},
		{"runtime bin with a colon", func(s *Spec) { s.RuntimeTree, s.RuntimeBin = "/opt/node", "/opt/node/b:in" }, "runtime_bin"},
		{"unclean runtime tree", func(s *Spec) { s.RuntimeTree, s.RuntimeBin = "/opt/../node", "/opt/../node/bin" }, "runtime_tree"},
		{"LD_PRELOAD handed in", func(s *Spec) { s.Env = []string{"LD_PRELOAD=/tmp/x.so"} }, "LD_PRELOAD"},
		{"HOME handed in", func(s *Spec) { s.Env = []string{"HOME=/root"} }, "HOME"},
		{"daemon proxy handed in", func(s *Spec) { s.Env = []string{"https_proxy=http://proxy.corp:3128"} }, "https_proxy"},
		{"duplicate env", func(s *Spec) { s.Env = []string{"A=1", "A=2"} }, "duplicate"},
		{"env without =", func(s *Spec) { s.Env = []string{"A"} }, "NAME=value"},
		{"tiny memory", func(s *Spec) { s.Limits.Memory = 10 }, "limits.memory"},
		{"negative tasks", func(s *Spec) { s.Limits.Tasks = -1 }, "limits.tasks"},
		{"sub-second wall clock", func(s *Spec) { s.Limits.WallClock = time.Millisecond }, "limits.wall_clock"},
		{"loopback endpoint", func(s *Spec) { s.Endpoint, s.EndpointAddr, s.Port, s.Env = "", "127.0.0.1:49733", 49733, nil }, ""},
		{"loopback endpoint beside a socket", func(s *Spec) { s.EndpointAddr = "127.0.0.1:8080" }, "endpoint_addr"},
		{"loopback endpoint on another port", func(s *Spec) { s.Endpoint, s.EndpointAddr = "", "127.0.0.1:49733" }, "endpoint_addr"},
		{"endpoint beyond loopback", func(s *Spec) { s.Endpoint, s.EndpointAddr = "", "10.0.0.1:8080" }, "endpoint_addr"},
		{"endpoint on every address", func(s *Spec) { s.Endpoint, s.EndpointAddr = "", "0.0.0.0:8080" }, "endpoint_addr"},
		{"endpoint by name", func(s *Spec) { s.Endpoint, s.EndpointAddr = "", "localhost:8080" }, "endpoint_addr"},
		{"proxy with the run's credentials", func(s *Spec) {
			s.Env = []string{"HTTPS_PROXY=http://anet:" + strings.Repeat("ab", 32) + "@127.0.0.1:8080"}
		}, ""},
		{"proxy with credentials elsewhere", func(s *Spec) { s.Env = []string{"HTTPS_PROXY=http://anet:x@127.0.0.2:8080"} }, "HTTPS_PROXY"},
		{"proxy with a path", func(s *Spec) { s.Env = []string{"HTTPS_PROXY=http://127.0.0.1:8080/x"} }, "HTTPS_PROXY"},
		{"proxy over https", func(s *Spec) { s.Env = []string{"HTTPS_PROXY=https://127.0.0.1:8080"} }, "HTTPS_PROXY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSpec()
			c.mutate(&s)
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, c.want)
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{}.WithDefaults()
	want := Limits{Memory: 2 << 30, Tasks: 256, Disk: 2 << 30, WallClock: 180 * time.Second, Grace: 5 * time.Second, FileSize: 2 << 30}
	if got != want {
		t.Fatalf("Limits{}.WithDefaults() = %+v, want %+v (S6)", got, want)
	}
}

// TestBaseEnv: a run's environment starts from these names only (S5), with the fixed
// in-sandbox home and tmp; bwrap sets them after --clearenv.
func TestBaseEnv(t *testing.T) {
	got := strings.Join(BaseEnv(), " ")
	want := "LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/agent TMPDIR=/tmp"
	if got != want {
		t.Fatalf("BaseEnv() = %q, want %q", got, want)
	}
}

func TestHomeFilesValidation(t *testing.T) {
	base := func() Spec {
		return Spec{ID: "r1", Mode: ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: "/tmp/runs"}
	}
	for _, tc := range []struct {
		name  string
		mode  Mode
		files []HomeFile
		want  string
	}{
		{"ok", ModeSandbox, []HomeFile{{Path: ".codex/config.toml", Mode: 0o600, Content: []byte("x")}}, ""},
		{"escape", ModeSandbox, []HomeFile{{Path: "../etc/passwd", Mode: 0o600}}, "home_files[0].path"},
		{"absolute", ModeSandbox, []HomeFile{{Path: "/etc/passwd", Mode: 0o600}}, "home_files[0].path"},
		{"setuid bits", ModeSandbox, []HomeFile{{Path: "x", Mode: 0o4700}}, "home_files[0].mode"},
		{"twice", ModeSandbox, []HomeFile{{Path: "x", Mode: 0o600}, {Path: "x", Mode: 0o600}}, "given twice"},
		{"too big", ModeSandbox, []HomeFile{{Path: "x", Mode: 0o600, Content: make([]byte, 40<<10)}}, "bytes in all"},
		{"direct mode", ModeDirect, []HomeFile{{Path: "x", Mode: 0o600}}, "only for sandboxed runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			s.Mode, s.HomeFiles = tc.mode, tc.files
			err := s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// M1: a backend with host paths puts a run's home and tmp under its run dir and its work dir
// where the spec says; the agent is told the same paths.
func TestHostRunDirsM1(t *testing.T) {
	s := validSpec()
	home, tmp, work := HostRunDirs(s)
	if home != "/var/cache/anet/runs/run-1/home" || tmp != "/var/cache/anet/runs/run-1/tmp" || work != "/var/cache/anet/work-sandbox/aid/inter" {
		t.Fatalf("HostRunDirs = %s %s %s", home, tmp, work)
	}
	s.WorkRoot, s.WorkSub = "", ""
	if _, _, work := HostRunDirs(s); work != "/var/cache/anet/runs/run-1/work" {
		t.Fatalf("HostRunDirs without a work root: work = %s", work)
	}
	env := strings.Join(HostPathEnv("/h", "/t", "/opt/homebrew/bin:/usr/bin"), "\n")
	for _, want := range []string{"HOME=/h", "TMPDIR=/t", "PATH=/opt/homebrew/bin:/usr/bin", "LANG=C.UTF-8"} {
		if !strings.Contains(env, want) {
			t.Errorf("HostPathEnv lacks %s:\n%s", want, env)
		}
	}
	if strings.Count(env, "PATH=") != 1 {
		t.Errorf("HostPathEnv has %d PATHs", strings.Count(env, "PATH="))
	}
}

// TestProbeResultTier: status and doctor name the vm tier's accelerator and link (V1).
func TestProbeResultTier(t *testing.T) {
	vm := ProbeResult{Checks: []check.Check{{Name: CheckVMAccel, OK: true, Detail: "tcg (kvm: sandbox_start_failed: …)"}, {Name: CheckVMTransport, OK: true, Detail: "serial"}}}
	if got := vm.Tier(); got != "vm (tcg, serial)" {
		t.Errorf("Tier() = %q, want vm (tcg, serial)", got)
	}
	if got := (ProbeResult{Checks: []check.Check{{Name: "loopback", OK: true}}}).Tier(); got != "" {
		t.Errorf("bwrap probe Tier() = %q, want empty", got)
	}
}
