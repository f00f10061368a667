package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// Validate checks every rule on c: allowed values, ranges, formats and the cross-field rules
// (egress_allow against api_base, H3; the claude agent's upstream, E10). Parse runs it too;
// it is exported so that a Config built in code is held to the same rules (fail closed twice).
// The work-root rule (S3) needs the paths: see Paths.CheckWorkRoots.
func (c Config) Validate() error {
	if errs := c.issues(); len(errs) > 0 {
		return joinErrors(errs)
	}
	return nil
}

func (c Config) issues() []*Error {
	var errs []*Error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, &Error{Key: key, Msg: err.Error()})
		}
	}
	a := c.AutoReply
	add("listen", checkListen(c.Listen))
	add("keys_file", checkAbsPath(c.KeysFile))
	add("log_level", oneOf(c.LogLevel, logLevels))
	add("auto_reply.backend", oneOf(a.Backend, backends))
	add("auto_reply.agent", oneOf(a.Agent, agents))
	add("auto_reply.trusted", oneOf(a.Trusted, trustedModes))
	add("auto_reply.untrusted", oneOf(a.Untrusted, untrustedModes))
	add("auto_reply.model", checkModel(a.Model))
	if re := apiBaseProblem(a); re != nil {
		// The endpoint's own rule and words (pkg/modelproxy/upstream), with its code.
		msg := reasons.Text(re.Code)
		if re.Detail != "" {
			msg += " (" + re.Detail + ")"
		}
		errs = append(errs, &Error{Key: "auto_reply.api_base", Msg: msg, Code: re.Code, bare: true})
	}
	if a.APITimeout < minAPITimeout || a.APITimeout > maxAPITimeout || a.APITimeout%time.Second != 0 {
		add("auto_reply.api_timeout_seconds", fmt.Errorf("%s is out of range (allowed: whole seconds, 1 to 86400)", fmtSeconds(a.APITimeout)))
	}
	add("auto_reply.work_dir", checkAbsPath(a.WorkDir))
	add("auto_reply.agent_runtime", checkAbsPath(a.AgentRuntime))
	if a.WorkRetention < 0 {
		add("auto_reply.work_retention", fmt.Errorf("%s is negative (allowed: 0 or more, e.g. 168h or 7d)", a.WorkRetention))
	}
	if err := ValidateEgressAllow(a.EgressAllow, a.APIBase); err != nil {
		for _, e := range unjoin(err) {
			var ee *EgressError
			if !errors.As(e, &ee) {
				continue
			}
			// EgressError's own words, as the CLI and the endpoint print them.
			msg := strings.TrimPrefix(ee.Error(), "egress_allow: ")
			msg = strings.TrimPrefix(msg, "egress_allow ")
			at := ""
			if ee.Index >= 0 {
				at = fmt.Sprintf("auto_reply.egress_allow[%d]", ee.Index)
			}
			errs = append(errs, &Error{Key: "auto_reply.egress_allow", Msg: msg, at: at, Code: EgressAllowRefused})
		}
	}
	s := a.Sandbox
	add("auto_reply.sandbox.runs_per_day", atLeast(int64(s.RunsPerDay), 0, false))
	add("auto_reply.sandbox.runs_per_peer_per_day", atLeast(int64(s.RunsPerPeerPerDay), 0, false))
	add("auto_reply.sandbox.spend_per_day", checkSpend(s.SpendPerDay))
	add("auto_reply.sandbox.spend_per_peer_per_day", checkSpend(s.SpendPerPeerPerDay))
	add("auto_reply.sandbox.memory_max", atLeast(s.MemoryMax, minMemoryMax, true))
	add("auto_reply.sandbox.tasks_max", atLeast(int64(s.TasksMax), minTasksMax, false))
	add("auto_reply.sandbox.disk_max", atLeast(s.DiskMax, minDiskMax, true))
	add("auto_reply.sandbox.isolation", oneOf(s.Isolation, isolations))
	add("auto_reply.sandbox.vm_accel", oneOf(s.VMAccel, vmAccels))
	in := c.Intake
	add("intake.stranger_pending_max", atLeast(in.StrangerPendingMax, 0, true))
	if in.StrangersPendingMax < in.StrangerPendingMax {
		add("intake.strangers_pending_max", fmt.Errorf("%s is less than intake.stranger_pending_max (%s): all strangers together must have at least one stranger's room",
			limits.FormatSize(in.StrangersPendingMax), limits.FormatSize(in.StrangerPendingMax)))
	}
	add("intake.disk_free_min", atLeast(in.DiskFreeMin, 0, true))
	add("dashboard.listen", CheckDashboardListen(c.Dashboard.Listen))
	add("dashboard.metrics_token_file", checkAbsPath(c.Dashboard.MetricsTokenFile))
	return errs
}

// apiBaseProblem applies the endpoint's api_base rule (E10, E11) to the configuration, for
// the back-end and agent that will use it: the openai back-end's upstream, and the exec
// back-end's whenever a run can be sandboxed (direct runs use the operator's own agent
// settings) or an api_base is set at all. An agent that cannot be sandboxed (cursor) is
// the agent's problem, and an api_base not set yet is a state (reported by status and per
// run as no_api_base), not a bad value: `anet autoreply set agent opencode` comes before
// `anet autoreply set api_base …`.
func apiBaseProblem(a AutoReply) *reasons.Error {
	var err error
	switch {
	case a.Backend == BackendOpenAI:
		if a.APIBase == "" {
			return nil
		}
		_, err = upstream.ForCompletion(a.APIBase)
	case a.Untrusted == ModeSandbox || a.Trusted == ModeSandbox || a.APIBase != "":
		_, err = upstream.For(string(a.Agent), a.APIBase)
	}
	var re *reasons.Error
	if errors.As(err, &re) && re.Code != reasons.AgentUnsupported && re.Code != reasons.NoAPIBase {
		return re
	}
	return nil
}

func fmtSeconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprint(int64(d / time.Second))
	}
	return d.String()
}

func oneOf[T ~string](v T, allowed []T) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return fmt.Errorf("%q is not allowed (allowed: %s)", string(v), strings.Join(names, ", "))
}

// atLeast checks a lower bound; sizes are shown with their unit, as the file writes them.
func atLeast(v, minimum int64, size bool) error {
	if v >= minimum {
		return nil
	}
	show := func(n int64) string { return fmt.Sprint(n) }
	if size {
		show = limits.FormatSize
	}
	return fmt.Errorf("%s is too small (minimum %s)", show(v), show(minimum))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// checkSpend refuses a negative cap (a Config built in code; the file's decimals cannot be).
func checkSpend(m money.Micros) error {
	if m < 0 {
		return fmt.Errorf("%s is negative (allowed: 0 or more, e.g. 5.00)", m)
	}
	return nil
}
