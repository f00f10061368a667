package launch

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/sandbox/attack"
)

// plantCanaries opens the host-side targets of the battery and returns the Env that points
// at them, and a function that closes and removes them all.
func plantCanaries(o SelfTestOptions) (attack.Env, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (attack.Env, func(), error) {
		cleanup()
		return attack.Env{}, nil, err
	}
	env, err := attack.Env{}.WithHostFacts()
	if err != nil {
		return fail(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("tcp canary: %w", err))
	}
	closers = append(closers, func() { tcp.Close() })
	go DrainListener(tcp)
	env.HostTCPPort = tcp.Addr().(*net.TCPAddr).Port

	env.AbstractName = RandomName("anet-selftest-", 12)
	abs, err := net.Listen("unix", "@"+env.AbstractName)
	if err != nil {
		return fail(fmt.Errorf("abstract canary: %w", err))
	}
	closers = append(closers, func() { abs.Close() })
	go DrainListener(abs)

	rt := o.RuntimeDir
	if rt == "" {
		rt = os.Getenv("XDG_RUNTIME_DIR")
	}
	if rt == "" {
		rt = os.TempDir()
	}
	env.RuntimeSocket = filepath.Join(rt, RandomName("anet-selftest-", 6)+".sock")
	rs, err := net.Listen("unix", env.RuntimeSocket)
	if err != nil {
		return fail(fmt.Errorf("runtime socket canary: %w", err))
	}
	closers = append(closers, func() { rs.Close(); os.Remove(env.RuntimeSocket) })
	go DrainListener(rs)

	plant := o.Plant
	if plant == "" {
		home, err := operatorHome()
		if err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		if plant, err = os.MkdirTemp(home, ".anet-selftest-"); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		p := plant
		closers = append(closers, func() { _ = linksafe.RemovePath(p) })
	}
	env.SSHKeyPath = filepath.Join(plant, ".ssh", "id_rsa")
	env.ControlTokenPath = filepath.Join(plant, "run", "anet", "control.token")
	env.DataDir = filepath.Join(plant, "data", "anet")
	for _, f := range []string{env.SSHKeyPath, env.ControlTokenPath, filepath.Join(env.DataDir, "store.db")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
		if err := os.WriteFile(f, []byte("anet self-test canary; not a secret\n"), 0o600); err != nil {
			return fail(fmt.Errorf("plant canaries: %w", err))
		}
	}
	return env, cleanup, nil
}

// operatorHome is where the operator's own secrets live: $HOME, or, for anet-sandboxd started
// by anetd with an environment built from nothing (no HOME), the user's home in the password
// database. The battery must find the canaries there out of reach.
func operatorHome() (string, error) {
	if h, err := os.UserHomeDir(); err == nil {
		return h, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("no $HOME and no home in the password database: %w", err)
	}
	if u.HomeDir == "" {
		return "", fmt.Errorf("no $HOME and user %s has no home in the password database", u.Username)
	}
	return u.HomeDir, nil
}
