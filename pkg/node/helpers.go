package node

import (
	"context"
	"path/filepath"
	"time"

	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
)

// helperEnvBase lists the only variables a helper gets, by name. Nothing is copied from the
// daemon's environment wholesale (docs/architecture.md rule 2): not the operator's secrets, not a
// proxy setting (H7).
var helperEnvBase = helperpath.Env()

// passThrough names the variables copied from anetd's environment when set, per helper, and
// why. TZ: the budget day and log times follow the node's time zone. SSL_CERT_FILE and
// SSL_CERT_DIR: the system certificate store may live elsewhere (E11); tests point them at a
// throw-away CA. XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS: under a user manager each run's
// limits are a transient scope of it (S6), which anet-sandboxd reaches by them; they name
// places, and the runs never see them (bwrap clears the environment).
var passThrough = map[string][]string{
	"sandboxd": {"TZ", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS"},
	"egress":   {"TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"},
}

func (n *Node) helperEnv(name string) []string {
	env := append([]string(nil), helperEnvBase...)
	for _, k := range append(passThrough[name], testPassThrough[name]...) {
		if v := n.opts.Env(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func (n *Node) startHelpers(ctx context.Context) error {
	// The same search as anet doctor's: --helper-dir, else beside anetd, else the packaged
	// ../libexec/anet.
	dir, err := helperpath.ForThisProgram(n.opts.HelperDir)
	if err != nil {
		return err
	}
	sandboxd := filepath.Join(dir, helperpath.Sandboxd)
	egress := filepath.Join(dir, helperpath.Egress)
	n.sandboxd = privsep.StartHelper(ctx, privsep.HelperSpec{
		Name: "sandboxd",
		Path: sandboxd,
		Args: append([]string{"serve"}, n.cfg.AutoReply.Sandbox.LauncherArgs(n.paths)...),
		Env:  n.helperEnv("sandboxd"),
	}, n.log)
	// The keys file's path (not its content) is all anetd hands over; the models override,
	// when the operator wrote one, is read by anet-egress too (it prices the runs, K1).
	args := []string{"serve", "--keys", n.paths.KeysFile, "--runs-dir", n.endpointsDir()}
	if m := preflight.ModelsFile(n.paths); m != "" {
		args = append(args, "--models", m)
	}
	n.egress = privsep.StartHelper(ctx, privsep.HelperSpec{
		Name: "egress",
		Path: egress,
		Args: args,
		Env:  n.helperEnv("egress"),
	}, n.log)
	return nil
}

// helpers returns both supervisors in display order.
func (n *Node) helpers() []*privsep.Supervisor {
	return []*privsep.Supervisor{n.sandboxd, n.egress}
}

// endpointsDir holds the runs' endpoint sockets (config.Paths.RunsDir).
func (n *Node) endpointsDir() string { return n.paths.RunsDir() }

// helperStartWait bounds how long a turn (or a proof of the wall) waits for helpers that are
// still starting.
const helperStartWait = 30 * time.Second

// waitHelpers returns once both helpers run, or after helperStartWait, or when ctx ends.
func (n *Node) waitHelpers(ctx context.Context) {
	deadline := time.Now().Add(helperStartWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if n.sandboxd.Status().State == privsep.StateRunning && n.egress.Status().State == privsep.StateRunning {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
