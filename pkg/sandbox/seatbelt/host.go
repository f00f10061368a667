//go:build unix

package seatbelt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// The host side of the self-check: the canaries it aims at, the targets it hands in, and the
// order of the items. It is the same code on every Unix, so a Linux test runs it whole with
// the profile left out, and every enforcement item must then fail.

// canaries are the host's targets of one self-check: a decoy loopback listener that counts
// what it accepts, a decoy unix socket, secrets planted under the operator's home, and for
// the probe an echo endpoint standing in for anet-egress's. close removes them all.
type canaries struct {
	dir       string // a short dir: unix socket paths hold 104 bytes on macOS
	decoy     net.Listener
	decoyHits atomic.Int64
	sock      net.Listener
	sockPath  string
	echo      net.Listener
	plant     string
	secrets   []string
	link      string
}

func openCanaries(operatorHome string, echo bool) (*canaries, error) {
	dir, err := os.MkdirTemp("/tmp", "anet-sbc-")
	if err != nil {
		return nil, fmt.Errorf("self-check canaries: %w", err)
	}
	c := &canaries{dir: dir}
	fail := func(err error) (*canaries, error) {
		c.close()
		return nil, fmt.Errorf("self-check canaries: %w", err)
	}
	if c.decoy, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return fail(err)
	}
	go func() {
		for {
			conn, err := c.decoy.Accept()
			if err != nil {
				return
			}
			c.decoyHits.Add(1)
			conn.Close()
		}
	}()
	c.sockPath = filepath.Join(dir, "decoy.sock")
	if c.sock, err = net.Listen("unix", c.sockPath); err != nil {
		return fail(err)
	}
	go launch.DrainListener(c.sock)
	if echo {
		if c.echo, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fail(err)
		}
		go echoLines(c.echo)
	}
	if c.plant, err = os.MkdirTemp(operatorHome, ".anet-selfcheck-"); err != nil {
		return fail(err)
	}
	for _, rel := range []string{".ssh/id_ed25519", "data/anet/anet.db", "run/anet/control.token"} {
		p := filepath.Join(c.plant, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(p, []byte("anet self-check canary; not a secret\n"), 0o600); err != nil {
			return fail(err)
		}
		c.secrets = append(c.secrets, p)
	}
	c.link = c.secrets[0]
	return c, nil
}

func (c *canaries) port(ln net.Listener) int {
	if ln == nil {
		return 0
	}
	return ln.Addr().(*net.TCPAddr).Port
}

func (c *canaries) close() {
	for _, ln := range []net.Listener{c.decoy, c.sock, c.echo} {
		if ln != nil {
			ln.Close()
		}
	}
	if c.plant != "" {
		_ = linksafe.RemovePath(c.plant)
	}
	_ = os.RemoveAll(c.dir)
}

// echoLines answers each connection's first line with itself.
func echoLines(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(itemTimeout))
			buf := make([]byte, 256)
			n, _ := conn.Read(buf)
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				conn.Write(buf[:i+1])
			}
		}()
	}
}

// checkInput is what one self-check is about.
type checkInput struct {
	// Run dirs (resolved); the hard link is tried in Work.
	Home, Tmp, Work string
	// OperatorHome and UserTemp (the operator's own temp dir, "" if unknown) must refuse writes.
	OperatorHome, UserTemp string
	// Hidden are the node's own paths (data, runtime, config dir, token): unreadable.
	Hidden []string
	// EndpointPort is the run's endpoint, or 0 for the canaries' echo endpoint.
	EndpointPort int
	// Self is the program that runs the items in the profile (anet-sandboxd).
	Self string
	// SelfArgs precede the check command (tests run a test binary).
	SelfArgs []string
	// Node and Agent are run in the profile when set; NodeMissing says there is no node.
	Node        string
	NodeMissing bool
	Agent       string
	// Keychain and Setuid are the macOS tools to try; External an address beyond the host.
	Keychain string
	Setuid   []string
	External string
	// Limits and Env, when set, are checked from inside (the self-test's run): the limits
	// the run got, and that its environment holds only the names in Env.
	Limits *RunLimits
	Env    []string
}

// targets builds the Targets of a check from its input and canaries. Secrets that do not
// exist on the host are left out: only an existing file shows the sandbox's refusal.
func (in checkInput) targets(c *canaries) Targets {
	t := Targets{
		WriteInside:  []string{in.Home, in.Tmp, in.Work},
		WriteOutside: []string{in.OperatorHome, "/private/tmp"},
		LinkSource:   c.link,
		LinkDir:      in.Work,
		EndpointPort: in.EndpointPort,
		DecoyPort:    c.port(c.decoy),
		DecoySocket:  c.sockPath,
		External:     in.External,
		Setuid:       in.Setuid,
		Keychain:     in.Keychain,
		HostPID:      os.Getpid(),
		Node:         in.Node,
		NodeMissing:  in.NodeMissing,
		Agent:        in.Agent,
		Limits:       in.Limits,
		EnvNames:     in.Env,
	}
	if in.UserTemp != "" {
		t.WriteOutside = append(t.WriteOutside, in.UserTemp)
	}
	if t.EndpointPort == 0 {
		t.EndpointPort, t.EndpointEcho = c.port(c.echo), true
	}
	cand := append([]string{}, c.secrets...)
	cand = append(cand, filepath.Join(in.OperatorHome, ".ssh"), filepath.Join(in.OperatorHome, "Library", "Keychains"))
	cand = append(cand, in.Hidden...)
	for _, p := range cand {
		if _, err := os.Lstat(p); err == nil {
			t.Secrets = append(t.Secrets, p)
		}
	}
	return t
}

// inProfile runs argv under the run's profile, with port as its endpoint, and returns its
// stdout, the tail of its stderr and its exit status (an error when it could not be run).
type inProfile func(ctx context.Context, port int, argv []string) (stdout []byte, stderr string, code int, err error)

// selfCheck runs one self-check: /usr/bin/true in the profile (the profile compiles and a
// program runs), then the items inside the profile, then what only the host side can see
// (the decoy listener accepted nothing). Every item is one check; a missing result fails.
func selfCheck(ctx context.Context, in checkInput, run inProfile) ([]check.Check, error) {
	c, err := openCanaries(in.OperatorHome, in.EndpointPort == 0)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var out []check.Check
	t := in.targets(c)
	_, stderr, code, err := run(ctx, t.EndpointPort, []string{"/usr/bin/true"})
	switch {
	case err != nil:
		out = append(out, fail(ItemProfile, "M1", "sandbox-exec did not run: "+err.Error()))
	case code != 0:
		out = append(out, fail(ItemProfile, "M1", fmt.Sprintf("/usr/bin/true in the profile exited %d: %s", code, clip(sandbox.LastLine(stderr)))))
	default:
		out = append(out, pass(ItemProfile, "M1", "the profile compiles and /usr/bin/true runs in it"))
	}
	tj, _ := json.Marshal(t)
	argv := append(append([]string{in.Self}, in.SelfArgs...), CheckCommand, "--targets", string(tj))
	stdout, stderr, code, err := run(ctx, t.EndpointPort, argv)
	var got []check.Check
	if err == nil {
		err = json.Unmarshal(bytes.TrimSpace(stdout), &got)
	}
	want := itemsOf(t)
	byName := map[string]check.Check{}
	for _, g := range got {
		byName[g.Name] = g
	}
	for _, name := range want {
		g, ok := byName[name]
		if !ok {
			g = fail(name, "M1", fmt.Sprintf("no result from the check program (exit %d, %v): %s", code, err, clip(sandbox.LastLine(stderr))))
		}
		out = append(out, g)
	}
	if n := c.decoyHits.Load(); n > 0 {
		out = append(out, fail(ItemDecoyHits, "S2,M1", fmt.Sprintf("the decoy listener on 127.0.0.1:%d accepted %d connection(s) from the profile", c.port(c.decoy), n)))
	} else {
		out = append(out, pass(ItemDecoyHits, "S2,M1", "the decoy listener accepted nothing"))
	}
	return out, nil
}
