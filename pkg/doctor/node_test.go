package doctor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// workingView is what a node with a sandbox, its agent, a key and a model tells doctor.
func workingView(t *testing.T) control.DoctorView {
	t.Helper()
	probe, err := json.Marshal(sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupFull, Checks: []check.Check{check.Pass("loopback", "S7", "relay echoed")}})
	if err != nil {
		t.Fatal(err)
	}
	return control.DoctorView{
		Probe:     probe,
		AgentPath: "/opt/agent/claude",
		Keys:      preflight.KeysVerdict{OK: true, Providers: []string{"anthropic"}},
		Run:       &preflight.RunVerdict{OK: true, Model: "claude-haiku-5-5"},
	}
}

func testSetup() Setup {
	c := config.Default()
	return Setup{
		Config: c, Paths: config.Paths{ConfigDir: "/cfg", KeysFile: "/cfg/keys.yaml", CacheDir: "/cache/anet"},
		AgentBinary: "claude", AgentInstall: "npm install -g @anthropic-ai/claude-code",
		AgentVersion: func(string) string { return "2.0.1 (Claude Code)" },
		LimitsFix:    "systemctl --user enable --now anetd",
		FreeBytes:    func(string) (int64, error) { return c.AutoReply.Sandbox.DiskMax * 4, nil },
	}
}

func byName(cs []check.Check) map[string]check.Check {
	m := map[string]check.Check{}
	for _, c := range cs {
		m[c.Name] = c
	}
	return m
}

// S8: a working node passes every check, and the agent check names the version.
func TestNodeChecksWorking(t *testing.T) {
	checks := NodeChecks(workingView(t), testSetup())
	for _, c := range checks {
		if !c.OK || c.Code != "" {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
	got := byName(checks)
	for _, name := range []string{"probe.loopback", "node.limits", "node.agent", "node.key", "node.model", "node.work", "node.sandbox_work"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no check %s in %+v", name, checks)
		}
	}
	if a := got["node.agent"]; !strings.Contains(a.Detail, "/opt/agent/claude (2.0.1 (Claude Code))") {
		t.Errorf("agent = %+v", a)
	}
	if l := got["node.limits"]; !l.OK || l.Detail != "full, each run gets its own cgroup with memory_max and tasks_max" {
		t.Errorf("limits without a named mechanism = %+v", l)
	}
	withMech := workingView(t)
	withMech.Probe, _ = json.Marshal(sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupFull, Mechanism: "systemd scope", Checks: []check.Check{check.Pass("loopback", "S7", "")}})
	if l := byName(NodeChecks(withMech, testSetup()))["node.limits"]; !l.OK || !strings.HasPrefix(l.Detail, "full, systemd scope: ") {
		t.Errorf("limits by a systemd scope = %+v, want the mechanism named (S6)", l)
	}
	// S6, F2: the delegated subtree is named, and so is why a better mechanism was not taken.
	const subtree = "delegated cgroup v2 subtree /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/anetd.service"
	withMech.Probe, _ = json.Marshal(sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupFull, Mechanism: "cgroup v2 delegated", MechanismDetail: subtree,
		Checks: []check.Check{check.Pass("loopback", "S7", "")}})
	if l := byName(NodeChecks(withMech, testSetup()))["node.limits"]; !l.OK || !strings.HasPrefix(l.Detail, "full, cgroup v2 delegated: ") || !strings.Contains(l.Detail, "("+subtree+")") {
		t.Errorf("limits by a delegated subtree = %+v, want the mechanism and the subtree named (S6)", l)
	}
	const why = "cgroup v2 not delegated: /sys/fs/cgroup/x is owned by uid 0, not 1000; no systemd user scope: XDG_RUNTIME_DIR is not set"
	withMech.Probe, _ = json.Marshal(sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupNone, Mechanism: "none", MechanismDetail: why,
		Warnings: []reasons.Code{reasons.NoCgroupLimits}, Checks: []check.Check{check.Pass("loopback", "S7", "")}})
	if l := byName(NodeChecks(withMech, testSetup()))["node.limits"]; l.Code != reasons.NoCgroupLimits || l.Detail != why {
		t.Errorf("limits without a mechanism = %+v, want no_cgroup_limits saying why (F2)", l)
	}
	v := workingView(t)
	v.AgentRuntime = "/opt/node/bin/node 24.21.0"
	if a := byName(NodeChecks(v, testSetup()))["node.agent"]; !a.OK || !strings.Contains(a.Detail, "runtime /opt/node/bin/node 24.21.0") {
		t.Errorf("agent with a runtime = %+v, want it named (E10)", a)
	}
	// S8: the sandbox's answer is the one shown; the host's is not asked.
	v.AgentSandbox = "2.0.2 (Claude Code), runtime 24.21.0"
	s := testSetup()
	s.AgentVersion = func(string) string { t.Error("the agent was asked on the host beside the sandbox's answer"); return "" }
	if a := byName(NodeChecks(v, s))["node.agent"]; !a.OK || !strings.Contains(a.Detail, "(in the sandbox: 2.0.2 (Claude Code), runtime 24.21.0)") {
		t.Errorf("agent that answered in the sandbox = %+v, want its answer there", a)
	}
}

// S8, F1, S6: each failure carries its code, a detail that does not repeat the code's
// sentence, and the command that fixes it.
func TestNodeChecksNameTheFix(t *testing.T) {
	noBwrap, _ := json.Marshal(sandbox.ProbeFailed(reasons.NoBwrap, "no_bwrap: "+reasons.Text(reasons.NoBwrap)+" (exec: bwrap not found)"))
	partial, _ := json.Marshal(sandbox.ProbeResult{OK: true, Limits: sandbox.CgroupNone, Warnings: []reasons.Code{reasons.NoCgroupLimits}, Checks: []check.Check{check.Pass("loopback", "S7", "")}})
	for _, tc := range []struct {
		name   string
		view   func(v *control.DoctorView)
		setup  func(s *Setup)
		check  string
		ok     bool
		code   reasons.Code
		fix    string
		detail string
	}{
		{"no bwrap", func(v *control.DoctorView) { v.Probe = noBwrap }, nil,
			"probe.sandbox", false, reasons.NoBwrap, "sudo apt-get install bubblewrap", ""},
		{"bwrap only on the operator's PATH", func(v *control.DoctorView) { v.Probe = noBwrap }, func(s *Setup) { s.BwrapOnPATH = "/home/op/bin/bwrap" },
			"probe.sandbox", false, reasons.NoBwrap, "sudo ln -s /home/op/bin/bwrap /usr/local/bin/bwrap", "your PATH has it at /home/op/bin/bwrap"},
		{"probe unreachable", func(v *control.DoctorView) { v.Probe, v.ProbeError = nil, "anet-sandboxd is not running" }, nil,
			"probe", false, "", "anet status", "anet-sandboxd is not running"},
		{"no cgroup limits", func(v *control.DoctorView) { v.Probe = partial }, nil,
			"node.limits", true, reasons.NoCgroupLimits, "systemctl --user enable --now anetd", ""},
		{"no agent", func(v *control.DoctorView) {
			v.AgentPath, v.AgentError = "", `exec: "claude": executable file not found in $PATH`
		}, nil,
			"node.agent", false, reasons.AgentMissing, "npm install -g @anthropic-ai/claude-code", "claude (claude): exec"},
		{"agent runtime too old", func(v *control.DoctorView) {
			v.AgentRuntimeError, v.AgentRuntimeCode = "/usr/bin/node is 20.20.2; openclaw needs Node >= 24.16 < 25 or >= 26.1", reasons.AgentRuntimeTooOld
		}, nil,
			"node.agent", false, reasons.AgentRuntimeTooOld, "anet autoreply set agent_runtime", "/usr/bin/node is 20.20.2"},
		{"agent fails in the sandbox", func(v *control.DoctorView) {
			v.AgentSandboxError, v.AgentSandboxCode = "/opt/agent/claude --version in the sandbox: exit 127: libfoo.so: cannot open shared object file", reasons.AgentFailsInSandbox
		}, nil,
			"node.agent", false, reasons.AgentFailsInSandbox, "npm install -g @anthropic-ai/claude-code", "exit 127: libfoo.so"},
		{"agent's runtime in the sandbox too old", func(v *control.DoctorView) {
			v.AgentSandboxError, v.AgentSandboxCode = "in the sandbox the agent's #! line finds node 20.20.2", reasons.AgentRuntimeTooOld
		}, nil,
			"node.agent", false, reasons.AgentRuntimeTooOld, "anet autoreply set agent_runtime", "node 20.20.2"},
		{"sandbox could not run the agent's check", func(v *control.DoctorView) {
			v.AgentSandboxError, v.AgentSandboxCode = "bwrap: setting up uid map: Permission denied", reasons.SandboxStartFailed
		}, nil,
			"node.agent", false, reasons.SandboxStartFailed, "the probe's checks", "uid map"},
		{"no key", func(v *control.DoctorView) { v.Keys.Providers = nil }, nil,
			"node.key", false, reasons.NoAPIKey, "add the line `anthropic: KEY` to /cfg/keys.yaml (mode 0600), then anet reload", "no key for anthropic"},
		{"keys file refused", func(v *control.DoctorView) {
			v.Keys = preflight.KeysVerdict{Code: "keys_file_exposed", Message: "the keys file is readable by others"}
		}, nil, "node.key", false, "keys_file_exposed", "anet reload", "readable by others"},
		{"no model", func(v *control.DoctorView) { v.Run = &preflight.RunVerdict{Code: reasons.NoModel, Message: "no model"} }, nil,
			"node.model", false, reasons.NoModel, "anet autoreply set model MODEL", "no model"},
		{"egress silent", func(v *control.DoctorView) { v.Run = nil }, nil,
			"node.model", false, reasons.HelperDown, "anet status shows anet-egress", "did not answer"},
		{"little disk", nil, func(s *Setup) { s.FreeBytes = func(string) (int64, error) { return limits.MiB, nil } },
			"node.sandbox_work", true, WorkDiskLow, "disk_max", "1 MiB free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, s := workingView(t), testSetup()
			if tc.view != nil {
				tc.view(&v)
			}
			if tc.setup != nil {
				tc.setup(&s)
			}
			checks := byName(NodeChecks(v, s))
			c, found := checks[tc.check]
			if !found {
				t.Fatalf("no check %q in %+v", tc.check, checks)
			}
			if c.OK != tc.ok || c.Code != tc.code || !strings.Contains(c.Fix, tc.fix) || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("%s = %+v\nwant ok %v, code %s, fix containing %q, detail containing %q", tc.check, c, tc.ok, tc.code, tc.fix, tc.detail)
			}
			if tc.code != "" && strings.Contains(c.Detail, reasons.Text(tc.code)) {
				t.Errorf("detail repeats the code's sentence: %q", c.Detail)
			}
			for name, other := range checks {
				if name != tc.check && name != "node.work" && (!other.OK || other.Code != "") {
					t.Errorf("another check changed: %+v", other)
				}
			}
		})
	}
}

// S8: disk space that cannot be read is a failure with the error, not a silent pass.
func TestNodeChecksDiskError(t *testing.T) {
	s := testSetup()
	s.FreeBytes = func(string) (int64, error) { return 0, errors.New("statfs: permission denied") }
	c := byName(NodeChecks(workingView(t), s))["node.work"]
	if c.OK || !strings.Contains(c.Detail, "permission denied") {
		t.Errorf("%+v", c)
	}
}
