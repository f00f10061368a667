//go:build unix

package seatbelt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/loopback"
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
	decoy6    net.Listener // on [::1]; nil where the host has no IPv6 loopback
	decoyHits atomic.Int64
	sock      net.Listener
	sockPath  string
	echo      *loopback.Pair // the probe's endpoint, held on [::1] as a run's is
	tty       *os.File       // the decoy terminal's master
	ttyPath   string
	launchd   string // the canary a launchd job of the run would create
	label     string // that job's label
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
	go c.count(c.decoy)
	if c.decoy6, err = net.Listen("tcp6", "[::1]:0"); err == nil {
		go c.count(c.decoy6)
	}
	if c.tty, c.ttyPath, err = openDecoyTTY(); err != nil {
		c.tty, c.ttyPath = nil, "" // a platform without ptys: the item is left out
	}
	c.launchd = filepath.Join(dir, "launchd-canary")
	c.label = launch.RandomName("dev.anet.selfcheck.", 6)
	c.sockPath = filepath.Join(dir, "decoy.sock")
	if c.sock, err = net.Listen("unix", c.sockPath); err != nil {
		return fail(err)
	}
	go launch.DrainListener(c.sock)
	if echo {
		if c.echo, err = loopback.Listen(); err != nil {
			return fail(err)
		}
		go echoLines(c.echo.Listener)
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

// count accepts and closes connections on a decoy, counting them.
func (c *canaries) count(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.decoyHits.Add(1)
		conn.Close()
	}
}

func (c *canaries) port(ln net.Listener) int {
	if ln == nil {
		return 0
	}
	return ln.Addr().(*net.TCPAddr).Port
}

func (c *canaries) echoPort() int {
	if c.echo == nil {
		return 0
	}
	return c.echo.Port
}

func (c *canaries) close() {
	for _, ln := range []net.Listener{c.decoy, c.decoy6, c.sock} {
		if ln != nil {
			ln.Close()
		}
	}
	if c.echo != nil {
		c.echo.Close()
	}
	if c.tty != nil {
		c.tty.Close()
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
	// Services asks sandbox_check(3) about the Mach services and operations a run must not
	// have; Launchctl is launchctl, asked to submit a job (and removing it from the host).
	Services  bool
	Launchctl string
	// UDP, DNSName, DNSServers and ResolverSocket are the DNS items' targets (Targets).
	UDP            []string
	DNSName        string
	DNSServers     []string
	ResolverSocket string
	// OperatorTTYs adds the operator's own terminals to the decoy terminal.
	OperatorTTYs bool
	// Tools are run in the profile (Targets.Tools).
	Tools []Tool
	// Peer, when set, starts a program in another sandbox of the same profile (the peer
	// item's target); it runs until its context ends.
	Peer inProfile
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
		DecoyPort6:   c.port(c.decoy6),
		Endpoint6:    c.decoy6 != nil,
		DecoyTTY:     c.ttyPath,
		UDP:          in.UDP,
		DNSName:      in.DNSName,
		DNSServers:   in.DNSServers,
		Tools:        in.Tools,
		OwnPTY:       c.ttyPath != "",
	}
	for _, f := range homebrewPublic {
		if _, err := os.Stat(f); err == nil {
			t.Readable = append(t.Readable, f)
		}
	}
	if in.DNSName != "" {
		t.ResolverSocket = in.ResolverSocket
	}
	if in.Services {
		allowed := askAllowed
		t.AsksDenied, t.AskAllowed = asksDenied, &allowed
	}
	if in.Launchctl != "" {
		t.Launchctl, t.LaunchdLabel, t.LaunchdCanary = in.Launchctl, c.label, c.launchd
	}
	if in.OperatorTTYs && c.ttyPath != "" {
		t.OtherTTYs = operatorTTYs(c.ttyPath)
	}
	if in.UserTemp != "" {
		t.WriteOutside = append(t.WriteOutside, in.UserTemp)
	}
	if t.EndpointPort == 0 {
		t.EndpointPort, t.EndpointEcho = c.echoPort(), true
	}
	cand := append([]string{}, c.secrets...)
	cand = append(cand, filepath.Join(in.OperatorHome, ".ssh"), filepath.Join(in.OperatorHome, "Library", "Keychains"))
	cand = append(cand, in.Hidden...)
	cand = append(cand, homebrewKeyDirs...)
	for _, p := range cand {
		if _, err := os.Lstat(p); err == nil {
			t.Secrets = append(t.Secrets, p)
		}
	}
	return t
}

// homebrewPublic are the OpenSSL files of Homebrew's installs that the profile opens (its
// node reads openssl.cnf at start); homebrewKeyDirs the key dirs beside them that stay shut.
var (
	homebrewPublic = []string{
		"/opt/homebrew/etc/openssl@3/openssl.cnf", "/opt/homebrew/etc/openssl@3/cert.pem",
		"/usr/local/etc/openssl@3/openssl.cnf", "/usr/local/etc/openssl@3/cert.pem",
	}
	homebrewKeyDirs = []string{"/opt/homebrew/etc/openssl@3/private", "/usr/local/etc/openssl@3/private"}
)

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
	var peerFailed *check.Check
	if in.Peer != nil {
		pid, stop, err := startPeer(ctx, in, t.EndpointPort)
		defer stop()
		if err != nil {
			f := fail(ItemPeer, "M1", err.Error())
			peerFailed = &f
		}
		t.PeerPID = pid
	}
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
	if peerFailed != nil {
		out = append(out, *peerFailed)
	}
	decoys := fmt.Sprintf("127.0.0.1:%d", c.port(c.decoy))
	if c.decoy6 != nil {
		decoys += fmt.Sprintf(" and [::1]:%d", c.port(c.decoy6))
	}
	if n := c.decoyHits.Load(); n > 0 {
		out = append(out, fail(ItemDecoyHits, "S2,M1", fmt.Sprintf("the decoy listeners on %s accepted %d connection(s) from the profile", decoys, n)))
	} else {
		out = append(out, pass(ItemDecoyHits, "S2,M1", "the decoy listeners on "+decoys+" accepted nothing"))
	}
	if t.Launchctl != "" {
		out = append(out, launchdAfter(ctx, t))
	}
	return out, nil
}

// startPeer starts a sleeper in a sandbox of its own from the same profile and dirs, as
// another run would be, and returns its pid once it has written it. stop ends it.
func startPeer(ctx context.Context, in checkInput, port int) (int, func(), error) {
	pctx, cancel := context.WithCancel(ctx)
	pidFile := filepath.Join(in.Tmp, randomName(".anet-selfcheck-peer-"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, _, _ = in.Peer(pctx, port, []string{"/bin/sh", "-c", `echo $$ > "$0" && exec /bin/sleep 120`, pidFile})
	}()
	stop := func() {
		cancel()
		<-done
		os.Remove(pidFile)
	}
	deadline := time.Now().Add(itemTimeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(pidFile)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid, stop, nil
		}
		select {
		case <-done:
			return 0, stop, errors.New("the sleeper in another sandbox of the profile exited before writing its pid")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, stop, fmt.Errorf("the sleeper in another sandbox of the profile wrote no pid in %v", itemTimeout)
}

// launchdAfter is the host side of the launchd item: the job the run asked for must not
// exist (removing it fails) and its canary must never appear. The label is removed either
// way, so nothing the check asked for outlives it.
func launchdAfter(ctx context.Context, t Targets) check.Check {
	rctx, cancel := context.WithTimeout(ctx, itemTimeout)
	defer cancel()
	removed := exec.CommandContext(rctx, t.Launchctl, "remove", t.LaunchdLabel).Run() == nil
	if removed {
		time.Sleep(500 * time.Millisecond) // a job that ran has had time to leave its canary
	}
	_, err := os.Lstat(t.LaunchdCanary)
	switch {
	case err == nil:
		return fail(ItemLaunchdRan, "M1", "a launchd job of the run ran outside the sandbox: it created "+t.LaunchdCanary)
	case removed:
		return fail(ItemLaunchdRan, "M1", "launchd held a job "+t.LaunchdLabel+" from the run (removed now)")
	}
	return pass(ItemLaunchdRan, "M1", "launchd holds no job "+t.LaunchdLabel+" and its canary never appeared")
}

// operatorTTYs are the terminals of the operator's own sessions (their own uid), besides
// the decoy: the targets a run would type into. A handful is enough.
func operatorTTYs(decoy string) []string {
	if ttyGlob == "" {
		return nil
	}
	paths, _ := filepath.Glob(ttyGlob)
	var out []string
	for _, p := range paths {
		var st syscall.Stat_t
		if p == decoy || !ttyPattern.MatchString(p) || syscall.Stat(p, &st) != nil || int(st.Uid) != os.Getuid() {
			continue
		}
		if out = append(out, p); len(out) == 8 {
			break
		}
	}
	return out
}

// defaultTools are the programs the tools item runs: git and python3 where the developer
// tools are installed (devTools: their /usr/bin shims only run a real program then), a shell
// writing to /dev/stderr, and npm where npm is found.
func defaultTools(devTools bool, npm string) []Tool {
	var out []Tool
	if devTools {
		out = append(out, Tool{Argv: []string{"/usr/bin/git", "--version"}}, Tool{Argv: []string{"/usr/bin/python3", "--version"}})
	}
	out = append(out, Tool{Argv: []string{"/bin/sh", "-c", "echo x >/dev/stderr"}, Stderr: "x\n"})
	if npm != "" {
		out = append(out, Tool{Argv: []string{npm, "-v"}})
	}
	return out
}
