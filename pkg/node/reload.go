package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// ReloadFailed is the warning of a reload whose files were refused: the node keeps running
// with the settings it had (U3).
const ReloadFailed reasons.Code = "reload_failed"

func init() {
	reasons.Register(reasons.Entry{Code: ReloadFailed, Kind: reasons.KindWarning,
		Text: "the last reload was refused; anetd keeps the settings it had (fix the file and run anet reload)", Requirement: "U3"})
}

// restartOnly are settings a reload reads but cannot apply: the peer listener's address is
// bound once, the keys file's path is what anet-egress is restarted with if it dies, intake's
// quotas are handed to the peer listener at start, and the sandbox tier is anet-sandboxd's
// argv (LauncherArgs).
var restartOnly = []struct {
	key     string
	changed func(old, new config.Config) bool
}{
	{"listen", func(o, n config.Config) bool { return o.Listen != n.Listen }},
	{"keys_file", func(o, n config.Config) bool { return o.KeysFile != n.KeysFile }},
	{"intake", func(o, n config.Config) bool { return o.Intake != n.Intake }},
	{"auto_reply.sandbox.isolation", func(o, n config.Config) bool {
		return o.AutoReply.Sandbox.Isolation != n.AutoReply.Sandbox.Isolation
	}},
	{"auto_reply.sandbox.vm_accel", func(o, n config.Config) bool {
		return o.AutoReply.Sandbox.VMAccel != n.AutoReply.Sandbox.VMAccel
	}},
}

// keepRestartOnly returns next with the settings in force kept where a reload cannot apply
// them (restartOnly), and the keys of those that changed: status then shows what is in
// force, and the operator is told what needs a restart.
func keepRestartOnly(old, next config.Config) (config.Config, []string) {
	changed := []string{}
	for _, r := range restartOnly {
		if r.changed(old, next) {
			changed = append(changed, r.key)
		}
	}
	next.Listen, next.KeysFile, next.Intake = old.Listen, old.KeysFile, old.Intake
	next.AutoReply.Sandbox.Isolation, next.AutoReply.Sandbox.VMAccel = old.AutoReply.Sandbox.Isolation, old.AutoReply.Sandbox.VMAccel
	return next, changed
}

// config returns the configuration in force.
func (n *Node) config() config.Config {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cfg
}

// reload reads the config file and the keys file again and applies what they say to every
// turn that starts from now on (U3): runs in flight keep the settings they started with. A
// file that does not pass every rule anetd starts with (pkg/preflight) changes nothing; the
// refusal is logged, kept for `anet status`, and returned.
func (n *Node) reload(ctx context.Context) (control.ReloadAnswer, error) {
	n.reloadMu.Lock()
	defer n.reloadMu.Unlock()
	ans, err := n.applyReload(ctx)
	st := control.ReloadState{At: time.Now().UTC(), OK: err == nil}
	if err != nil {
		st.Code, st.Error = string(reasons.CodeOf(err)), reasons.Message(err)
		if st.Code == "" {
			st.Code = string(reasons.Internal)
		}
		n.log.Error("reload refused; the settings in force are unchanged", "code", st.Code, "err", st.Error)
	} else {
		n.log.Info("reloaded", "config", ans.ConfigPath, "restart_needed", ans.RestartNeeded)
	}
	n.mu.Lock()
	n.lastReload = &st
	n.mu.Unlock()
	return ans, err
}

func (n *Node) applyReload(ctx context.Context) (control.ReloadAnswer, error) {
	o := preflight.Options{Env: n.opts.Env, ConfigPath: n.opts.ConfigPath, HelperDir: n.opts.HelperDir}
	paths, next, err := preflight.Run(ctx, o)
	if err != nil {
		return control.ReloadAnswer{}, err
	}
	old := n.config()
	ans := control.ReloadAnswer{OK: true, ConfigPath: paths.ConfigFile}
	next, ans.RestartNeeded = keepRestartOnly(old, next)
	// anet-egress reads the keys again (the file anetd started it with) and the models
	// file; it keeps what it had from a file it refuses, and this reload is refused too.
	var a preflight.CheckAnswer
	req := preflight.ReloadKeysRequest{Path: n.paths.KeysFile, Models: preflight.ModelsFile(n.paths)}
	if _, err := n.egress.Call(ctx, preflight.MethodReloadKeys, req, &a); err != nil {
		return control.ReloadAnswer{}, fmt.Errorf("reload keys in anet-egress: %w", err)
	}
	n.mu.Lock()
	n.keys = &keysSeen{pid: n.egress.Status().PID, verdict: a.Keys, models: a.Models}
	n.mu.Unlock()
	if err := a.Keys.Err(); err != nil {
		return control.ReloadAnswer{}, err
	}
	if a.Models != nil {
		if err := a.Models.Err(); err != nil {
			return control.ReloadAnswer{}, err
		}
	}
	if n.ar != nil {
		if err := n.ar.reload(next.AutoReply, n.paths.WorkRoot(next)); err != nil {
			return control.ReloadAnswer{}, err
		}
	}
	if n.opts.LogLevel != nil {
		n.opts.LogLevel.Set(next.LogLevel.Slog())
	}
	n.mu.Lock()
	n.cfg = next
	n.mu.Unlock()
	if sandboxChanged(old, next) {
		// What a sandboxed turn runs under changed: the last proof was of another wall.
		n.wallReload()
	}
	// The dashboard follows: started, stopped or moved; one that cannot listen is a
	// warning in status, not a refused reload (the rest of the file is in force).
	if n.control != nil {
		n.applyDashboard(next.Dashboard)
	}
	return ans, nil
}

// sandboxChanged reports whether a reload changes what sandboxed turns run with: the tier,
// the limits (S6) or the agent.
func sandboxChanged(old, next config.Config) bool {
	o, x := old.AutoReply, next.AutoReply
	return o.Sandbox.Isolation != x.Sandbox.Isolation || o.Sandbox.VMAccel != x.Sandbox.VMAccel ||
		o.Sandbox.MemoryMax != x.Sandbox.MemoryMax || o.Sandbox.TasksMax != x.Sandbox.TasksMax || o.Sandbox.DiskMax != x.Sandbox.DiskMax ||
		o.APITimeout != x.APITimeout || o.Agent != x.Agent || o.AgentRuntime != x.AgentRuntime
}

// keysSeen is anet-egress's verdicts on the keys file and the models file from the last
// reload, valid for the helper process that gave them (a restarted helper says them again in
// its hello).
type keysSeen struct {
	pid     int
	verdict preflight.KeysVerdict
	models  *preflight.ModelsVerdict
}

// keysVerdict is what anet-egress last said of the keys file: its answer to the last reload,
// or, for a helper started since, its hello.
func (n *Node) keysVerdict(eg privsep.Status) preflight.KeysVerdict {
	n.mu.Lock()
	seen := n.keys
	n.mu.Unlock()
	if seen != nil && seen.pid == eg.PID {
		return seen.verdict
	}
	v := preflight.KeysVerdict{OK: true, Providers: []string{}}
	if ps, ok := eg.Info["providers_with_key"].([]any); ok {
		for _, p := range ps {
			if s, ok := p.(string); ok {
				v.Providers = append(v.Providers, s)
			}
		}
	}
	if ke, ok := eg.Info["keys_error"].(string); ok {
		code, _ := eg.Info["keys_code"].(string)
		v.OK, v.Code, v.Message = false, reasons.Code(code), ke
	}
	return v
}

// modelsVerdict is what anet-egress last said of the models file, as keysVerdict: OK when
// it has said nothing against it.
func (n *Node) modelsVerdict(eg privsep.Status) preflight.ModelsVerdict {
	n.mu.Lock()
	seen := n.keys
	n.mu.Unlock()
	if seen != nil && seen.pid == eg.PID {
		if seen.models == nil {
			return preflight.ModelsVerdict{OK: true}
		}
		return *seen.models
	}
	if me, ok := eg.Info["models_error"].(string); ok {
		code, _ := eg.Info["models_code"].(string)
		return preflight.ModelsVerdict{Code: reasons.Code(code), Message: me}
	}
	return preflight.ModelsVerdict{OK: true}
}

// reloadOnHangup reloads on every SIGHUP (`kill -HUP`) until ctx ends.
func (n *Node) reloadOnHangup(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			n.reload(rctx)
			cancel()
		}
	}
}

func (n *Node) reloadRoutes(s *control.Server) {
	s.Handle("POST", "/v1/reload", func(r *http.Request) (any, error) { return n.reload(r.Context()) })
}

// reloadState is the last reload for status, and its warning while it stands refused.
func (n *Node) reloadState() (*control.ReloadState, []control.Warning) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lastReload == nil {
		return nil, nil
	}
	st := *n.lastReload
	if st.OK {
		return &st, nil
	}
	return &st, []control.Warning{{Code: string(ReloadFailed), Text: reasons.Text(ReloadFailed), Detail: st.Code + ": " + st.Error}}
}

// AskReload asks the running anetd for the dirs env names to reload and waits for its
// answer (`anetd --reload`, the units' ExecReload=): the exit status then says whether the
// new settings are in force.
func AskReload(ctx context.Context, env func(string) string) (control.ReloadAnswer, error) {
	p, err := config.DefaultPaths(env)
	if err != nil {
		return control.ReloadAnswer{}, err
	}
	// As the CLI: no socket, or another user's, is said so before a token is read or sent.
	if err := control.CheckSocket(p.ControlSocket()); err != nil {
		return control.ReloadAnswer{}, err
	}
	tok, err := control.ReadToken(p.ControlToken())
	if err != nil {
		return control.ReloadAnswer{}, err
	}
	var ans control.ReloadAnswer
	err = control.NewClient(p.ControlSocket(), tok).Do(ctx, "POST", "/v1/reload", struct{}{}, &ans)
	return ans, err
}
