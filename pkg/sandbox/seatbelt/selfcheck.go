//go:build unix

package seatbelt

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// CheckCommand is anet-sandboxd's hidden subcommand that runs the self-check inside the
// profile: `anet-sandboxd seatbelt-check --targets JSON`. It prints the checks as one JSON
// array.
const CheckCommand = "seatbelt-check"

// Targets are what the host side opened, planted or names for the self-check; they travel
// into the sandbox as JSON. An empty field leaves its item out.
type Targets struct {
	// WriteInside are the run's own dirs: a write there must work.
	WriteInside []string `json:"write_inside,omitempty"`
	// WriteOutside are dirs a write must be refused in: the operator's home, the shared
	// /private/tmp, the operator's own temp dir.
	WriteOutside []string `json:"write_outside,omitempty"`
	// Secrets must be unreadable: planted canaries, ~/.ssh, the keychains, the node's data
	// dir, runtime dir and control token. Only paths that exist on the host are listed.
	Secrets []string `json:"secrets,omitempty"`
	// LinkSource is a planted secret that a hard link made in LinkDir (a run dir) must not
	// reach: a link is another name for the same file, and the run can read its own dirs.
	LinkSource string `json:"link_source,omitempty"`
	LinkDir    string `json:"link_dir,omitempty"`
	// EndpointPort is the run's endpoint: connecting must work. With EndpointEcho the host
	// side echoes a line there (the probe's stand-in endpoint).
	EndpointPort int  `json:"endpoint_port,omitempty"`
	EndpointEcho bool `json:"endpoint_echo,omitempty"`
	// DecoyPort is another host loopback listener, DecoySocket a host unix socket and
	// External an address beyond the machine: each connection must be refused.
	DecoyPort   int    `json:"decoy_port,omitempty"`
	DecoySocket string `json:"decoy_socket,omitempty"`
	External    string `json:"external,omitempty"`
	// Setuid is a setuid program with its arguments (sudo -n id -u): it must gain nothing.
	Setuid []string `json:"setuid,omitempty"`
	// Keychain is the keychain tool (/usr/bin/security): dumping a keychain must fail.
	Keychain string `json:"keychain,omitempty"`
	// HostPID is a process outside the sandbox: signalling it must be refused.
	HostPID int `json:"host_pid,omitempty"`
	// Node is node's path (os.cpus() must work); NodeMissing says the host has none.
	Node        string `json:"node,omitempty"`
	NodeMissing bool   `json:"node_missing,omitempty"`
	// Agent is the run's agent: `Agent --version` must work in the profile.
	Agent string `json:"agent,omitempty"`
	// AsksDenied are what the profile must refuse, AskAllowed one thing it opens (the
	// control): asked with sandbox_check(3).
	AsksDenied []Ask `json:"asks_denied,omitempty"`
	AskAllowed *Ask  `json:"ask_allowed,omitempty"`
	// Launchctl is launchctl's path: `submit -l LaunchdLabel` of a job that would create
	// LaunchdCanary, outside the run, must be refused.
	Launchctl     string `json:"launchctl,omitempty"`
	LaunchdLabel  string `json:"launchd_label,omitempty"`
	LaunchdCanary string `json:"launchd_canary,omitempty"`
	// DecoyTTY is a pseudo-terminal slave the host opened, OtherTTYs the operator's own
	// terminals: opening any must be refused.
	DecoyTTY  string   `json:"decoy_tty,omitempty"`
	OtherTTYs []string `json:"other_ttys,omitempty"`
	// UDP are addresses beyond the machine (public resolvers, as IP literals) a datagram
	// must not reach; DNSName a public name that must not resolve, for the sandbox's reason.
	// DNSServers, when set, replace resolv.conf's (the tests' loopback stand-in);
	// ResolverSocket is the system resolver's socket (mDNSResponder's), which must refuse.
	UDP            []string `json:"udp,omitempty"`
	DNSName        string   `json:"dns_name,omitempty"`
	DNSServers     []string `json:"dns_servers,omitempty"`
	ResolverSocket string   `json:"resolver_socket,omitempty"`
	// DecoyPort6 is a host listener on [::1]: connecting must be refused. Endpoint6 asks
	// that the endpoint port on [::1] be the node's held side (pkg/loopback) or refused.
	DecoyPort6 int  `json:"decoy_port6,omitempty"`
	Endpoint6  bool `json:"endpoint6,omitempty"`
	// PeerPID is a process in another sandbox of the same profile (another run): signalling
	// and inspecting it must be refused.
	PeerPID int `json:"peer_pid,omitempty"`
	// Tools are programs an agent's commands start: each must work in the profile.
	Tools []Tool `json:"tools,omitempty"`
	// Readable are public files the profile opens for real installs (Homebrew's OpenSSL
	// configuration and CA bundle), those that exist on the host: each must read.
	Readable []string `json:"readable,omitempty"`
	// OwnPTY asks that a terminal the run makes itself opens (the pty extension's grant).
	OwnPTY bool `json:"own_pty,omitempty"`
	// Limits are the resource limits the run must have; EnvNames the only variables its
	// environment may hold (the self-test's run).
	Limits   *RunLimits `json:"limits,omitempty"`
	EnvNames []string   `json:"env_names,omitempty"`
}

// Self-check items, in the order they run.
const (
	ItemProfile     = "profile"      // sandbox-exec compiles the profile and /usr/bin/true runs (host side)
	ItemWriteInside = "write_inside" // the run's own dirs are writable
	ItemWriteOut    = "write_outside"
	ItemSecrets     = "secrets"
	ItemHardlink    = "hardlink"
	ItemOwnLink     = "own_hardlink" // a hard link inside the run's own dir works (git, npm's cache)
	ItemReadable    = "readable"     // Homebrew's OpenSSL files read, where they exist
	ItemKeychain    = "keychain"
	ItemEndpoint    = "endpoint"
	ItemEndpoint6   = "endpoint6" // the endpoint port on [::1] is the node's, or refused
	ItemDecoyPort   = "decoy_port"
	ItemDecoyPort6  = "decoy_port6" // a host listener on [::1]
	ItemDecoySocket = "decoy_socket"
	ItemExternal    = "external"
	ItemUDP         = "udp" // datagrams to public resolvers
	ItemDNS         = "dns" // a public name does not resolve, for the sandbox's reason
	ItemSignal      = "signal"
	ItemPeer        = "peer_sandbox" // another run's process: signals and process information
	ItemServices    = "services"     // Mach services, LaunchServices, Apple events, launchd jobs (sandbox_check)
	ItemLaunchd     = "launchd_submit"
	ItemTTY         = "other_tty"
	ItemOwnPTY      = "own_pty" // a terminal the run makes itself opens
	ItemSetuid      = "setuid"
	ItemNode        = "node"
	ItemAgent       = "agent_version"
	ItemTools       = "tools" // git, python3, npm, a shell writing to /dev/stderr
	ItemRlimits     = "rlimits"
	ItemEnv         = "environment"
	ItemDecoyHits   = "decoy_unreached"   // host side: the decoy listeners accepted nothing
	ItemLaunchdRan  = "launchd_unstarted" // host side: the job launchctl was asked for never ran
	ItemLimits      = "limits"            // host side: what bounds a run on macOS
)

// itemTimeout bounds each item that waits (connects, programs).
const itemTimeout = 20 * time.Second

// items are the self-check's items that run inside the profile, in order: each with whether
// Targets asks for it and how it runs. The host side lists the same table's names to know
// which results to expect.
var items = []struct {
	name string
	on   func(Targets) bool
	run  func(Targets) check.Check
}{
	{ItemWriteInside, func(t Targets) bool { return len(t.WriteInside) > 0 }, func(t Targets) check.Check { return writeInside(t.WriteInside) }},
	{ItemWriteOut, func(t Targets) bool { return len(t.WriteOutside) > 0 }, func(t Targets) check.Check { return writeOutside(t.WriteOutside) }},
	{ItemSecrets, func(t Targets) bool { return len(t.Secrets) > 0 }, func(t Targets) check.Check { return secrets(t.Secrets) }},
	{ItemHardlink, func(t Targets) bool { return t.LinkSource != "" && t.LinkDir != "" }, func(t Targets) check.Check { return hardlink(t.LinkSource, t.LinkDir) }},
	{ItemOwnLink, func(t Targets) bool { return t.LinkDir != "" }, func(t Targets) check.Check { return ownHardlink(t.LinkDir) }},
	{ItemReadable, func(t Targets) bool { return len(t.Readable) > 0 }, func(t Targets) check.Check { return readable(t.Readable) }},
	{ItemKeychain, func(t Targets) bool { return t.Keychain != "" }, func(t Targets) check.Check { return keychain(t.Keychain) }},
	{ItemEndpoint, func(t Targets) bool { return t.EndpointPort != 0 }, func(t Targets) check.Check { return endpoint(t.EndpointPort, t.EndpointEcho) }},
	{ItemEndpoint6, func(t Targets) bool { return t.EndpointPort != 0 && t.Endpoint6 }, func(t Targets) check.Check { return endpoint6(t.EndpointPort) }},
	{ItemDecoyPort, func(t Targets) bool { return t.DecoyPort != 0 }, func(t Targets) check.Check {
		return refusedDial(ItemDecoyPort, "S2,M1", "tcp", "127.0.0.1:"+strconv.Itoa(t.DecoyPort))
	}},
	{ItemDecoyPort6, func(t Targets) bool { return t.DecoyPort6 != 0 }, func(t Targets) check.Check {
		return refusedDial(ItemDecoyPort6, "S2,M1", "tcp6", net.JoinHostPort("::1", strconv.Itoa(t.DecoyPort6)))
	}},
	{ItemDecoySocket, func(t Targets) bool { return t.DecoySocket != "" }, func(t Targets) check.Check {
		return refusedDial(ItemDecoySocket, "S2,M1", "unix", t.DecoySocket)
	}},
	{ItemExternal, func(t Targets) bool { return t.External != "" }, func(t Targets) check.Check {
		return refusedDial(ItemExternal, "S2,M1", "tcp", t.External)
	}},
	{ItemUDP, func(t Targets) bool { return len(t.UDP) > 0 }, func(t Targets) check.Check { return udpSend(t.UDP, t.DNSName) }},
	{ItemDNS, func(t Targets) bool { return t.DNSName != "" }, dnsLookup},
	{ItemSignal, func(t Targets) bool { return t.HostPID != 0 }, func(t Targets) check.Check { return signalHost(t.HostPID) }},
	{ItemPeer, func(t Targets) bool { return t.PeerPID != 0 }, func(t Targets) check.Check { return peer(t.PeerPID) }},
	{ItemServices, func(t Targets) bool { return t.AskAllowed != nil }, services},
	{ItemLaunchd, func(t Targets) bool { return t.Launchctl != "" }, launchdSubmit},
	{ItemTTY, func(t Targets) bool { return t.DecoyTTY != "" }, otherTTY},
	{ItemOwnPTY, func(t Targets) bool { return t.OwnPTY }, func(Targets) check.Check { return ownPTY() }},
	{ItemSetuid, func(t Targets) bool { return len(t.Setuid) > 0 }, func(t Targets) check.Check { return setuid(t.Setuid) }},
	{ItemNode, func(t Targets) bool { return t.Node != "" || t.NodeMissing }, func(t Targets) check.Check { return nodeCPUs(t.Node) }},
	{ItemAgent, func(t Targets) bool { return t.Agent != "" }, func(t Targets) check.Check { return agentVersion(t.Agent) }},
	{ItemTools, func(t Targets) bool { return len(t.Tools) > 0 }, func(t Targets) check.Check { return tools(t.Tools) }},
	{ItemRlimits, func(t Targets) bool { return t.Limits != nil }, func(t Targets) check.Check { return rlimits(*t.Limits) }},
	{ItemEnv, func(t Targets) bool { return len(t.EnvNames) > 0 }, func(t Targets) check.Check { return environment(t.EnvNames) }},
}

// RunChecks runs every item t asks for, in the calling process: inside the profile, as the
// run would. A protection counts as in force only when the operation fails for the sandbox's
// own reason (EPERM); another failure, or success, fails the item.
func RunChecks(t Targets) []check.Check {
	var out []check.Check
	for _, it := range items {
		if it.on(t) {
			out = append(out, it.run(t))
		}
	}
	return out
}

// itemsOf names the items RunChecks runs for t.
func itemsOf(t Targets) []string {
	var names []string
	for _, it := range items {
		if it.on(t) {
			names = append(names, it.name)
		}
	}
	return names
}

func pass(name, req, detail string) check.Check { return check.Pass(name, req, detail) }

func fail(name, req, detail string) check.Check {
	return check.Fail(name, req, reasons.SelfCheckFailed, detail)
}

// deniedBySandbox reports whether err is the sandbox's refusal, EPERM.
func deniedBySandbox(err error) bool { return errors.Is(err, syscall.EPERM) }

func errnoText(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func writeInside(dirs []string) check.Check {
	for _, d := range dirs {
		p := filepath.Join(d, randomName(".anet-selfcheck-"))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = f.Write([]byte("anet self-check\n"))
			f.Close()
			os.Remove(p)
		}
		if err != nil {
			return fail(ItemWriteInside, "S3,M1", fmt.Sprintf("cannot write in the run's own dir %s: %v", d, err))
		}
	}
	return pass(ItemWriteInside, "S3,M1", fmt.Sprintf("wrote and removed a file in each of %d run dirs", len(dirs)))
}

func writeOutside(dirs []string) check.Check {
	for _, d := range dirs {
		p := filepath.Join(d, randomName(".anet-selfcheck-"))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			os.Remove(p)
			return fail(ItemWriteOut, "S3,M1", "wrote a file in "+d+", outside the run's dirs")
		}
		if !deniedBySandbox(err) {
			return fail(ItemWriteOut, "S3,M1", fmt.Sprintf("a write in %s failed with %s, not the sandbox's EPERM: something else stopped it", d, errnoText(err)))
		}
	}
	return pass(ItemWriteOut, "S3,M1", fmt.Sprintf("writes refused (EPERM) in %s", strings.Join(dirs, ", ")))
}

func secrets(paths []string) check.Check {
	for _, p := range paths {
		f, err := os.Open(p)
		if err == nil {
			f.Close()
			return fail(ItemSecrets, "F3,S3,M1", "opened "+p)
		}
		if !deniedBySandbox(err) {
			return fail(ItemSecrets, "F3,S3,M1", fmt.Sprintf("opening %s failed with %s, not the sandbox's EPERM", p, errnoText(err)))
		}
		if _, err := os.Lstat(p); err == nil || !deniedBySandbox(err) {
			return fail(ItemSecrets, "F3,S3,M1", fmt.Sprintf("%s is not hidden: its metadata can be read (%v)", p, err))
		}
	}
	return pass(ItemSecrets, "F3,S3,M1", fmt.Sprintf("%d secret paths unreadable (EPERM)", len(paths)))
}

func hardlink(src, dir string) check.Check {
	dst := filepath.Join(dir, randomName(".anet-selfcheck-link-"))
	err := os.Link(src, dst)
	if err == nil {
		os.Remove(dst)
		return fail(ItemHardlink, "F3,S3,M1", "hard-linked "+src+" into the run's dir "+dir+": the secret is readable through the link")
	}
	if errors.Is(err, syscall.EXDEV) {
		return pass(ItemHardlink, "F3,S3,M1", "the run's dir is on another volume than the operator's files: no hard link can join them")
	}
	if !deniedBySandbox(err) {
		return fail(ItemHardlink, "F3,S3,M1", fmt.Sprintf("a hard link of %s failed with %s, not the sandbox's EPERM", src, errnoText(err)))
	}
	return pass(ItemHardlink, "F3,S3,M1", "a hard link to a secret outside is refused (EPERM)")
}

// ownHardlink makes a file in the run's own dir and a second name for it there: what git and
// npm's cache do, which the profile's file-link grant of the run's dirs is for.
func ownHardlink(dir string) check.Check {
	const req = "S3,M1"
	src := filepath.Join(dir, randomName(".anet-selfcheck-own-"))
	dst := src + "-link"
	defer os.Remove(src)
	defer os.Remove(dst)
	if err := os.WriteFile(src, []byte("anet self-check\n"), 0o600); err != nil {
		return fail(ItemOwnLink, req, fmt.Sprintf("cannot write in the run's dir %s: %v", dir, err))
	}
	if err := os.Link(src, dst); err != nil {
		return fail(ItemOwnLink, req, fmt.Sprintf("a hard link inside the run's dir %s failed: %s", dir, errnoText(err)))
	}
	a, err1 := os.Stat(src)
	b, err2 := os.Stat(dst)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		return fail(ItemOwnLink, req, fmt.Sprintf("the link in %s is not the same file (%v, %v)", dir, err1, err2))
	}
	return pass(ItemOwnLink, req, "a hard link inside the run's own dir works")
}

// readable reads each of paths: public files of real installs that the profile opens.
func readable(paths []string) check.Check {
	const req = "M1"
	for _, p := range paths {
		f, err := os.Open(p)
		if err == nil {
			_, err = f.Read(make([]byte, 1))
			f.Close()
			if errors.Is(err, io.EOF) {
				err = nil // an empty file reads too
			}
		}
		if err != nil {
			return fail(ItemReadable, req, fmt.Sprintf("%s does not read in the profile: %s", p, errnoText(err)))
		}
	}
	return pass(ItemReadable, req, fmt.Sprintf("%d public file(s) of the host's installs read: %s", len(paths), strings.Join(paths, ", ")))
}

// ownPTY makes a terminal the way a shell or expect does, through /dev/ptmx, and opens its
// slave: the profile grants terminals only with the pty extension, which the kernel gives a
// terminal made in the sandbox, so this proves the grant works and other_tty that it stops
// there.
func ownPTY() check.Check {
	const req = "M1"
	m, name, err := openDecoyTTY()
	if err != nil {
		return fail(ItemOwnPTY, req, "the run cannot make a terminal: "+err.Error())
	}
	defer m.Close()
	s, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(ItemOwnPTY, req, fmt.Sprintf("the run's own terminal %s does not open: %s", name, errnoText(err)))
	}
	s.Close()
	return pass(ItemOwnPTY, req, "a terminal the run made opens ("+name+")")
}

// keychain runs `security dump-keychain`, which without -d prints no secret: it must fail.
func keychain(tool string) check.Check {
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, "dump-keychain")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	err := cmd.Run()
	if err == nil {
		return fail(ItemKeychain, "F3,M1", tool+" dump-keychain succeeded: the run reaches the operator's keychain")
	}
	return pass(ItemKeychain, "F3,M1", tool+" dump-keychain fails: "+errnoText(err))
}

func endpoint(port int, echo bool) check.Check {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c, err := net.DialTimeout("tcp", addr, itemTimeout)
	if err != nil {
		return fail(ItemEndpoint, "E1,M1", fmt.Sprintf("cannot connect to the run's endpoint %s: %v", addr, err))
	}
	defer c.Close()
	if !echo {
		return pass(ItemEndpoint, "E1,M1", "connected to the run's endpoint "+addr)
	}
	_ = c.SetDeadline(time.Now().Add(itemTimeout))
	if _, err := c.Write([]byte("anet-selfcheck\n")); err != nil {
		return fail(ItemEndpoint, "E1,M1", "write to the endpoint: "+err.Error())
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "anet-selfcheck\n" {
		return fail(ItemEndpoint, "E1,M1", fmt.Sprintf("the endpoint's echo = %q, %v", line, err))
	}
	return pass(ItemEndpoint, "E1,M1", "a line went to the endpoint "+addr+" and back")
}

func refusedDial(name, req, network, addr string) check.Check {
	c, err := net.DialTimeout(network, addr, itemTimeout)
	if err == nil {
		c.Close()
		return fail(name, req, "connected to "+addr)
	}
	if !deniedBySandbox(err) {
		return fail(name, req, fmt.Sprintf("connecting to %s failed with %s, not the sandbox's EPERM", addr, errnoText(err)))
	}
	return pass(name, req, "connecting to "+addr+" is refused (EPERM)")
}

// signalHost sends SIGWINCH, which every process of the node ignores, to a process outside:
// a real signal, not the null one, so the check does not rest on how the kernel checks that.
func signalHost(pid int) check.Check {
	err := syscall.Kill(pid, syscall.SIGWINCH)
	if err == nil {
		return fail(ItemSignal, "M1", fmt.Sprintf("may signal process %d outside the sandbox", pid))
	}
	if !deniedBySandbox(err) {
		return fail(ItemSignal, "M1", fmt.Sprintf("signalling process %d failed with %s, not the sandbox's EPERM", pid, errnoText(err)))
	}
	return pass(ItemSignal, "M1", fmt.Sprintf("signalling process %d outside is refused (EPERM)", pid))
}

// setuid runs a setuid program that prints the user it ends up as (sudo -n id -u): the run
// must not become root, whether the program cannot start, fails, or runs unprivileged.
func setuid(argv []string) check.Check {
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = &out
	err := cmd.Run()
	got := strings.TrimSpace(out.String())
	if err == nil && got == "0" {
		return fail(ItemSetuid, "M1", strings.Join(argv, " ")+" ran as root")
	}
	if err == nil {
		return fail(ItemSetuid, "M1", fmt.Sprintf("%s succeeded (as uid %q)", strings.Join(argv, " "), got))
	}
	return pass(ItemSetuid, "M1", strings.Join(argv, " ")+" gains nothing: "+errnoText(err))
}

// nodeCPUs runs `node -e os.cpus()`: Node needs host processor information that a too-narrow
// profile withholds.
func nodeCPUs(node string) check.Check {
	if node == "" {
		return pass(ItemNode, "M1", "node is not installed on this host: nothing to check")
	}
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "-e", "process.stdout.write(String(require('os').cpus().length))").Output()
	n, cerr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || cerr != nil || n < 1 {
		return fail(ItemNode, "M1", fmt.Sprintf("node -e os.cpus() in the profile: %q, %v", clip(string(out)), err))
	}
	return pass(ItemNode, "M1", fmt.Sprintf("node sees %d CPUs", n))
}

// agentVersion runs the agent with --version in the profile: a profile too narrow for the
// agent fails here, before the turn, not in the middle of it.
func agentVersion(agent string) check.Check {
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agent, "--version")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fail(ItemAgent, "M1", fmt.Sprintf("%s --version in the profile: %v: %s", agent, err, clip(strings.TrimSpace(stderr.String()))))
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return pass(ItemAgent, "M1", clip(filepath.Base(agent)+": "+first))
}

// environment: the run's variables are exactly those it was given (S5): nothing of the
// launcher's or the operator's environment came along.
func environment(allowed []string) check.Check {
	ok := map[string]bool{}
	for _, n := range allowed {
		ok[n] = true
	}
	var extra []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !ok[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		return fail(ItemEnv, "S5,M1", "variables the run was not given: "+strings.Join(extra, " "))
	}
	return pass(ItemEnv, "S5,M1", fmt.Sprintf("%d variables, all given by the launcher", len(os.Environ())))
}

// existing keeps the paths that exist (a refusal shows only on a file that is there).
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// envNames are the names of a run's variables: the launcher's base and those handed in.
func envNames(base, given []string) []string {
	var out []string
	for _, kv := range append(append([]string{}, base...), given...) {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}
