//go:build unix

package seatbelt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox"
)

// The self-check items beyond files and the endpoint: the system's services, launchd,
// other terminals, DNS and UDP, the IPv6 loopback, another run's processes, and the tools an
// agent starts.

// Ask is one question to sandbox_check(3): operation Op, with a filter argument of type
// Filter (0 for none). The filter numbers are enum sandbox_filter_type's as WebKit's
// Source/WTF/wtf/spi/darwin/SandboxSPI.h and LLVM's compiler-rt declare it.
type Ask struct {
	Op     string `json:"op"`
	Filter int    `json:"filter,omitempty"`
	Arg    string `json:"arg,omitempty"`
}

const (
	filterNone             = 0 // SANDBOX_FILTER_NONE
	filterGlobalName       = 2 // SANDBOX_FILTER_GLOBAL_NAME: a Mach service's name
	filterAppleEventTarget = 4 // SANDBOX_FILTER_APPLEEVENT_DESTINATION: a bundle id
)

func (a Ask) String() string { return strings.TrimSpace(a.Op + " " + a.Arg) }

func lookup(name string) Ask { return Ask{Op: "mach-lookup", Filter: filterGlobalName, Arg: name} }

// asksDenied are what a run must not have: Mach services that would act for it outside its
// sandbox, opening apps and documents through LaunchServices, Apple events, and launchd
// jobs. askAllowed is one the profile opens: a check that answers "denied" for it too is not
// asking what the profile says, and fails the item.
var (
	asksDenied = []Ask{
		lookup("com.apple.coreservices.launchservicesd"), // LaunchServices: open any app or URL
		lookup("com.apple.lsd.mapdb"),                    // LaunchServices' database of apps and handlers
		lookup("com.apple.pasteboard.1"),                 // the operator's clipboard
		lookup("com.apple.SecurityServer"),               // the keychains, through securityd
		lookup("com.apple.securityd.xpc"),
		lookup("com.apple.tccd"),                     // privacy consent (TCC)
		lookup("com.apple.windowserver.active"),      // the screen, and keystrokes into other apps
		lookup("com.apple.coreservices.appleevents"), // Apple events to other apps
		lookup("com.apple.dnssd.service"),            // mDNSResponder: DNS for the run
		lookup("com.apple.xpc.smd"),                  // installing privileged helpers
		lookup("com.apple.ocspd"),                    // fetches URLs outside for the run (see the profile)
		{Op: "lsopen"},
		{Op: "appleevent-send", Filter: filterAppleEventTarget, Arg: "com.apple.finder"},
		{Op: "appleevent-send", Filter: filterAppleEventTarget, Arg: "com.apple.systemevents"},
		{Op: "job-creation"},
	}
	askAllowed = lookup("com.apple.system.opendirectoryd.libinfo")
	// sandboxAsk is sandbox_check(3) (libsystem_*.go) and dnsDial the dns item's dialer:
	// tests answer for them.
	sandboxAsk = sandboxCheck
	dnsDial    = (&net.Dialer{}).DialContext
)

// services asks the kernel, with sandbox_check(3), whether the profile refuses each of
// asksDenied and admits askAllowed: nothing is looked up, opened or sent.
func services(t Targets) check.Check {
	const req = "M1"
	if denied, err := sandboxAsk(*t.AskAllowed); err != nil || denied {
		return fail(ItemServices, req, fmt.Sprintf("sandbox_check of %s, which the profile opens, = denied %v, %v: the check does not ask the profile", t.AskAllowed, denied, err))
	}
	for _, a := range t.AsksDenied {
		denied, err := sandboxAsk(a)
		if err != nil {
			return fail(ItemServices, req, err.Error())
		}
		if !denied {
			return fail(ItemServices, req, "the profile allows "+a.String())
		}
	}
	return pass(ItemServices, req, fmt.Sprintf("sandbox_check: %d Mach services, LaunchServices, Apple events and launchd jobs denied, %s allowed",
		len(t.AsksDenied), t.AskAllowed))
}

// launchdSubmit asks launchd to run a job that would write a canary outside the run: the
// job would run outside the sandbox, as the operator. launchctl must be refused; the host
// side then checks that the canary never appeared and removes the label.
func launchdSubmit(t Targets) check.Check {
	const req = "M1"
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, t.Launchctl, "submit", "-l", t.LaunchdLabel, "--",
		"/bin/sh", "-c", `exec /usr/bin/touch "$0"`, t.LaunchdCanary)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Run()
	if err == nil {
		return fail(ItemLaunchd, req, "launchctl submit succeeded: launchd took a job from the run, to run outside the sandbox")
	}
	return pass(ItemLaunchd, req, clip("launchctl submit refused: "+errnoText(err)+": "+sandbox.LastLine(out.String())))
}

// otherTTY opens terminals the run did not open: the host's decoy and the operator's own.
// Writing to one types into the operator's shell (and TIOCSTI injects input): each must be
// refused with EPERM. An operator terminal that closed since the host listed it is skipped;
// the decoy must give EPERM.
func otherTTY(t Targets) check.Check {
	const req = "M1,S4"
	tried := 0
	for i, p := range append([]string{t.DecoyTTY}, t.OtherTTYs...) {
		if p == "" {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.Close()
			return fail(ItemTTY, req, "opened "+p+", a terminal the run did not open")
		}
		if i > 0 && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EIO)) {
			continue
		}
		if !deniedBySandbox(err) {
			return fail(ItemTTY, req, fmt.Sprintf("opening %s failed with %s, not the sandbox's EPERM", p, errnoText(err)))
		}
		tried++
	}
	if tried == 0 {
		return fail(ItemTTY, req, "no terminal was tried")
	}
	return pass(ItemTTY, req, fmt.Sprintf("opening %d terminals the run did not open is refused (EPERM)", tried))
}

// dnsQuery is a query for NAME/A with id 0x414e ("AN"): what a leaked datagram would carry.
func dnsQuery(name string) []byte {
	q := []byte{0x41, 0x4e, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}

// udpSend sends one datagram to each address beyond the machine, with sendto(2) on an
// unconnected socket: the path a DNS client takes. Each must be refused with EPERM, at the
// socket or at the send, before a packet leaves.
func udpSend(addrs []string, name string) check.Check {
	const req = "S2,M1"
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return fail(ItemUDP, req, fmt.Sprintf("UDP target %q: %v", a, err))
		}
		ip := ap.Addr().Unmap()
		family := syscall.AF_INET6
		var sa syscall.Sockaddr = &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}
		if ip.Is4() {
			family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}
		}
		fd, err := syscall.Socket(family, syscall.SOCK_DGRAM, 0)
		if err == nil {
			err = syscall.Sendto(fd, dnsQuery(name), 0, sa)
			syscall.Close(fd)
			if err == nil {
				return fail(ItemUDP, req, "sent a UDP datagram to "+a)
			}
		}
		if !deniedBySandbox(err) {
			return fail(ItemUDP, req, fmt.Sprintf("a UDP datagram to %s failed with %s, not the sandbox's EPERM", a, errnoText(err)))
		}
	}
	return pass(ItemUDP, req, "UDP to "+strings.Join(addrs, ", ")+" is refused (EPERM)")
}

// dnsLookup: a public name must not resolve, and for the sandbox's reason, not because the
// host is offline. Go's own resolver asks the name servers in /etc/resolv.conf (or those the
// targets name) through a dialer that records every attempt: the item passes only when every
// attempt was refused with EPERM, which no network failure gives (offline is ENETUNREACH,
// EHOSTUNREACH or a timeout). On macOS the system's resolver (getaddrinfo, which asks
// mDNSResponder over its socket) must fail too, and that socket must refuse with EPERM: it
// is local, so an answer there does not depend on the network.
func dnsLookup(t Targets) check.Check {
	const req = "S2,M1"
	var mu sync.Mutex
	var attempts []error
	record := func(err error) {
		mu.Lock()
		attempts = append(attempts, err)
		mu.Unlock()
	}
	next := 0
	r := &net.Resolver{PreferGo: true, StrictErrors: true, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if len(t.DNSServers) > 0 {
			mu.Lock()
			addr = t.DNSServers[next%len(t.DNSServers)]
			next++
			mu.Unlock()
		}
		c, err := dnsDial(ctx, network, addr)
		if err != nil {
			record(err)
			return nil, err
		}
		w := &firstWrite{addr: addr, record: record}
		if u, ok := c.(*net.UDPConn); ok {
			// Still a PacketConn: the resolver frames its queries by that.
			return &recordingUDP{UDPConn: u, w: w}, nil
		}
		return &recordingConn{Conn: c, w: w}, nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
	defer cancel()
	addrs, err := r.LookupHost(ctx, t.DNSName)
	if err == nil {
		return fail(ItemDNS, req, fmt.Sprintf("%s resolved to %s", t.DNSName, strings.Join(addrs, " ")))
	}
	mu.Lock()
	got := append([]error{}, attempts...)
	mu.Unlock()
	if len(got) == 0 {
		return fail(ItemDNS, req, fmt.Sprintf("looking up %s failed before any name server was asked (%v): not the sandbox's refusal", t.DNSName, err))
	}
	for _, e := range got {
		if !deniedBySandbox(e) {
			return fail(ItemDNS, req, fmt.Sprintf("looking up %s failed, but not by the sandbox: %v", t.DNSName, e))
		}
	}
	if systemLookup != nil {
		if addrs, err := systemLookup(ctx, t.DNSName); err == nil {
			return fail(ItemDNS, req, fmt.Sprintf("the system resolver resolved %s to %s", t.DNSName, strings.Join(addrs, " ")))
		}
	}
	if t.ResolverSocket != "" {
		if c := refusedDial(ItemDNS, req, "unix", t.ResolverSocket); !c.OK {
			return c
		}
	}
	detail := fmt.Sprintf("%s does not resolve: %d queries to name servers refused (EPERM)", t.DNSName, len(got))
	if t.ResolverSocket != "" {
		detail += ", the system resolver's socket " + t.ResolverSocket + " refused (EPERM)"
	}
	return pass(ItemDNS, req, detail)
}

// firstWrite records a connection's first write: its error (a UDP connect may pass where
// the send is refused), or that a query left, which is no refusal at all.
type firstWrite struct {
	addr   string
	record func(error)
	once   sync.Once
}

func (f *firstWrite) saw(err error) {
	f.once.Do(func() {
		if err == nil {
			err = fmt.Errorf("a query went to %s", f.addr)
		}
		f.record(err)
	})
}

type recordingConn struct {
	net.Conn
	w *firstWrite
}

func (c *recordingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.w.saw(err)
	return n, err
}

type recordingUDP struct {
	*net.UDPConn
	w *firstWrite
}

func (c *recordingUDP) Write(b []byte) (int, error) {
	n, err := c.UDPConn.Write(b)
	c.w.saw(err)
	return n, err
}

// endpoint6 dials the run's endpoint port on [::1], which the profile's "localhost:PORT"
// admits too: the node holds that side (pkg/loopback) and closes every connection at once
// without reading, so no other program can listen there and receive what the run sends.
// EPERM passes as well (a profile that names 127.0.0.1 alone). Nobody listening fails (any
// program could take the port), and so does a listener that keeps the connection open or
// answers: it is not the node's.
func endpoint6(port int) check.Check {
	const req = "E1,M1"
	addr := net.JoinHostPort("::1", strconv.Itoa(port))
	c, err := net.DialTimeout("tcp6", addr, itemTimeout)
	if err != nil {
		if deniedBySandbox(err) {
			return pass(ItemEndpoint6, req, "connecting to "+addr+" is refused (EPERM)")
		}
		return fail(ItemEndpoint6, req, fmt.Sprintf("connecting to %s failed with %s: nothing of the node holds it, so any program could listen there", addr, errnoText(err)))
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 64))
	if n == 0 && errors.Is(err, io.EOF) {
		return pass(ItemEndpoint6, req, addr+" is held by the node: closed at once, nothing read")
	}
	return fail(ItemEndpoint6, req, fmt.Sprintf("a listener on %s that is not the node's held side: read %d bytes, %v", addr, n, err))
}

// peer signals and inspects a process in another sandbox started from the same profile
// (another run): the profile lets signals and process information reach only its own
// sandbox (signal and process-info* with target same-sandbox).
func peer(pid int) check.Check {
	const req = "M1"
	for _, sig := range []syscall.Signal{syscall.SIGWINCH, syscall.SIGCONT} {
		err := syscall.Kill(pid, sig)
		if err == nil {
			return fail(ItemPeer, req, fmt.Sprintf("sent %v to process %d of another sandbox", sig, pid))
		}
		if !deniedBySandbox(err) {
			return fail(ItemPeer, req, fmt.Sprintf("signalling process %d of another sandbox failed with %s, not the sandbox's EPERM", pid, errnoText(err)))
		}
	}
	p, err := procPath(pid)
	if err == nil {
		return fail(ItemPeer, req, fmt.Sprintf("read the program of process %d of another sandbox: %s", pid, p))
	}
	if !deniedBySandbox(err) {
		return fail(ItemPeer, req, fmt.Sprintf("inspecting process %d of another sandbox failed with %s, not the sandbox's EPERM", pid, errnoText(err)))
	}
	return pass(ItemPeer, req, fmt.Sprintf("signals and process information of process %d in another sandbox are refused (EPERM)", pid))
}

// Tool is a program the tools item runs: it must exit 0, and when Stderr is set, write
// exactly that to its stderr.
type Tool struct {
	Argv   []string `json:"argv"`
	Stderr string   `json:"stderr,omitempty"`
}

// tools runs what an agent's shell commands start (git, python3, npm, a shell writing to
// its stderr): each must work in the profile, each in a session of its own as the run's
// programs are.
func tools(list []Tool) check.Check {
	const req = "M1"
	var seen []string
	for _, tool := range list {
		argv := tool.Argv
		ctx, cancel := context.WithTimeout(context.Background(), itemTimeout)
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err := cmd.Run()
		cancel()
		name := filepath.Base(argv[0])
		if err != nil {
			return fail(ItemTools, req, clip(fmt.Sprintf("%s in the profile: %v: %s", strings.Join(argv, " "), err, sandbox.LastLine(errb.String()))))
		}
		first := sandbox.LastLine(out.String() + errb.String())
		if tool.Stderr != "" && errb.String() != tool.Stderr {
			return fail(ItemTools, req, fmt.Sprintf("%s wrote %q to its stderr, want %q", strings.Join(argv, " "), errb.String(), tool.Stderr))
		}
		seen = append(seen, name+": "+first)
	}
	return pass(ItemTools, req, clip(strings.Join(seen, "; ")))
}
