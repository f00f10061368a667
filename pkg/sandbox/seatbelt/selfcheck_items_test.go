//go:build linux

package seatbelt

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/loopback"
	"anet.dev/anet/pkg/reasons"
)

func wantCheck(t *testing.T, c check.Check, ok bool, detail string) {
	t.Helper()
	if c.OK != ok || !strings.Contains(c.Detail, detail) {
		t.Errorf("%s = ok %v %q, want ok %v with %q", c.Name, c.OK, c.Detail, ok, detail)
	}
}

// M1: the services item passes only when sandbox_check says "denied" for every service and
// operation a run must not have, and "allowed" for the one the profile opens: a check that
// denies everything (wrong arguments) or fails is no proof.
func TestServicesItemNeedsTheProfilesAnswersM1(t *testing.T) {
	allowed := askAllowed
	tg := Targets{AsksDenied: asksDenied, AskAllowed: &allowed}
	defer func() { sandboxAsk = sandboxCheck }()
	profile := func(a Ask) (bool, error) { return a != askAllowed, nil }
	for _, c := range []struct {
		name   string
		ask    func(Ask) (bool, error)
		ok     bool
		detail string
	}{
		{"the profile's answers", profile, true, "15 Mach services, LaunchServices, Apple events and launchd jobs denied"},
		{"nothing enforced", func(Ask) (bool, error) { return false, nil }, false, "allows mach-lookup com.apple.coreservices.launchservicesd"},
		{"denies everything", func(Ask) (bool, error) { return true, nil }, false, "does not ask the profile"},
		{"allows Apple events", func(a Ask) (bool, error) { return a.Op != "appleevent-send" && a != askAllowed, nil }, false, "the profile allows appleevent-send com.apple.finder"},
		{"allows launchd jobs", func(a Ask) (bool, error) { return a.Op != "job-creation" && a != askAllowed, nil }, false, "the profile allows job-creation"},
		{"cannot ask", func(a Ask) (bool, error) {
			if a.Arg == "com.apple.tccd" {
				return false, errors.New("sandbox_check(mach-lookup com.apple.tccd) = -1: invalid argument")
			}
			return profile(a)
		}, false, "= -1"},
	} {
		sandboxAsk = c.ask
		wantCheck(t, services(tg), c.ok, c.detail)
	}
}

// M1: the control is a service the shipped profile opens, and none of the services that
// must be denied is named there: a profile change that breaks the item shows here first.
func TestServicesMatchTheProfileM1(t *testing.T) {
	if !strings.Contains(profileText, `(global-name "`+askAllowed.Arg+`")`) {
		t.Errorf("profile.sb does not open %s, the services item's control", askAllowed.Arg)
	}
	for _, a := range asksDenied {
		if a.Arg != "" && strings.Contains(profileText, `"`+a.Arg+`"`) {
			t.Errorf("profile.sb names %s, which the services item expects denied", a.Arg)
		}
	}
}

// M1: launchctl refused and no job left: both sides pass. (A launchctl that takes the job
// fails both: TestSelfCheckFailsWithoutTheProfileM1.)
func TestLaunchdRefusedPassesM1(t *testing.T) {
	d := t.TempDir()
	lc := filepath.Join(d, "launchctl")
	if err := os.WriteFile(lc, []byte("#!/bin/sh\necho 'Submitting job: Operation not permitted' >&2\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	tg := Targets{Launchctl: lc, LaunchdLabel: "dev.anet.selfcheck.test", LaunchdCanary: filepath.Join(d, "canary")}
	wantCheck(t, launchdSubmit(tg), true, "Operation not permitted")
	wantCheck(t, launchdAfter(context.Background(), tg), true, "holds no job")
	// A canary that appeared anyway (a job started by another way) fails the host side.
	if err := os.WriteFile(tg.LaunchdCanary, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, launchdAfter(context.Background(), tg), false, "ran outside the sandbox")
}

// M1, S4: the decoy terminal must be refused with EPERM; a decoy that is not there at all is
// no refusal. An operator terminal that closed since it was listed is skipped.
func TestOtherTTYNeedsEPERMM1(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "ttys999")
	wantCheck(t, otherTTY(Targets{DecoyTTY: gone}), false, "not the sandbox's EPERM")
	m, decoy, err := openDecoyTTY()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	wantCheck(t, otherTTY(Targets{DecoyTTY: decoy, OtherTTYs: []string{gone}}), false, "opened "+decoy)
}

// S2, M1: a datagram that leaves fails the item (TestSelfCheckFailsWithoutTheProfileM1); one
// that fails for another reason than the sandbox fails it too.
func TestUDPNeedsEPERMS2(t *testing.T) {
	wantCheck(t, udpSend([]string{"127.0.0.1:0"}, "example.com"), false, "not the sandbox's EPERM")
	wantCheck(t, udpSend([]string{"example.com:53"}, "example.com"), false, "UDP target")
	pc, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	wantCheck(t, udpSend([]string{pc.LocalAddr().String()}, "example.com"), false, "sent a UDP datagram to [::1]:")
	buf := make([]byte, 512)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || n < 12 || buf[0] != 0x41 || buf[1] != 0x4e {
		t.Fatalf("the leaked datagram = %x, %v; want the item's DNS query", buf[:n], err)
	}
}

// S2, M1: a lookup that fails because the name server is down (a query left) is not the
// sandbox's refusal; nor is a system resolver that answers, or its socket accepting.
func TestDNSNeedsTheSandboxsRefusalS2(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := pc.LocalAddr().String()
	pc.Close() // nothing answers there: the query is sent, the reply never comes
	tg := Targets{DNSName: "anet-selfcheck.example", DNSServers: []string{dead}}
	wantCheck(t, dnsLookup(tg), false, "not by the sandbox: ")

	// From here the Go resolver's queries are refused as a sandbox would (EPERM at the send).
	tg.DNSServers = []string{nameServer(t)}
	if wrong := dnsLookup(tg); wrong.OK {
		t.Fatalf("a name server that answers gave %+v", wrong)
	}
	defer func() { systemLookup = nil }()
	systemLookup = func(context.Context, string) ([]string, error) { return []string{"192.0.2.7"}, nil }
	c := dnsWith(t, tg)
	wantCheck(t, c, false, "the system resolver resolved anet-selfcheck.example to 192.0.2.7")
	systemLookup = func(context.Context, string) ([]string, error) { return nil, errors.New("no such host") }
	sock := filepath.Join(t.TempDir(), "mDNSResponder")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tg.ResolverSocket = sock
	wantCheck(t, dnsWith(t, tg), false, "connected to "+sock)
	ln.Close()
	wantCheck(t, dnsWith(t, tg), false, "not the sandbox's EPERM")
	tg.ResolverSocket = ""
	wantCheck(t, dnsWith(t, tg), true, "queries to name servers refused (EPERM)")
}

// dnsWith runs the dns item with every name server query refused with EPERM, as the
// profile refuses it: the name servers are replaced by an address whose dial the test's
// dialer refuses.
func dnsWith(t *testing.T, tg Targets) check.Check {
	t.Helper()
	defer func() { dnsDial = (&net.Dialer{}).DialContext }()
	dnsDial = func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "udp", Err: os.NewSyscallError("connect", syscall.EPERM)}
	}
	return dnsLookup(tg)
}

// E1, M1: the endpoint port on [::1] passes only as the node's held side (closed at once)
// or refused; a port nobody holds, or somebody else's listener there, fails.
func TestEndpoint6NeedsTheNodesHoldE1(t *testing.T) {
	p, err := loopback.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if p.Held == nil {
		t.Fatal("this host has ::1 (the test machines do), but the pair holds nothing there")
	}
	wantCheck(t, endpoint6(p.Port), true, "held by the node")
	p.Close()
	wantCheck(t, endpoint6(p.Port), false, "nothing of the node holds it")
	other, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")) // a listener that answers
			defer c.Close()
		}
	}()
	wantCheck(t, endpoint6(other.Addr().(*net.TCPAddr).Port), false, "not the node's held side")
}

// M1: signalling a process that is not there is ESRCH, not the sandbox's refusal.
func TestPeerNeedsEPERMM1(t *testing.T) {
	wantCheck(t, peer(1<<22+7), false, "not the sandbox's EPERM")
	wantCheck(t, peer(os.Getpid()), false, "sent window changed to process "+strconv.Itoa(os.Getpid()))
}

// M1: a tool that fails or writes the wrong thing fails the item.
func TestToolsM1(t *testing.T) {
	wantCheck(t, tools(defaultTools(false, "")), true, "sh: x")
	wantCheck(t, tools([]Tool{{Argv: []string{"/bin/sh", "-c", "echo no >&2; exit 3"}}}), false, "exit status 3: no")
	wantCheck(t, tools([]Tool{{Argv: []string{"/bin/sh", "-c", "echo y >/dev/stderr"}, Stderr: "x\n"}}), false, `wrote "y\n" to its stderr`)
	if got := defaultTools(true, "/opt/homebrew/bin/npm"); len(got) != 4 || got[0].Argv[0] != "/usr/bin/git" || got[3].Argv[1] != "-v" {
		t.Errorf("defaultTools(dev tools, npm) = %v", got)
	}
}

// M1: the grants real installs need are proved from inside as well: a public file the
// profile opens must read (a missing or refused one fails, naming it), and a hard link in
// the run's own dir must work (a dir the run cannot write fails).
func TestGrantsItemsNeedTheGrantM1(t *testing.T) {
	dir := t.TempDir()
	cnf := filepath.Join(dir, "openssl.cnf")
	if err := os.WriteFile(cnf, []byte("openssl_conf = openssl_init\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := readable([]string{cnf, empty}); !c.OK {
		t.Errorf("readable files: %+v", c)
	}
	missing := filepath.Join(dir, "gone.cnf")
	if c := readable([]string{cnf, missing}); c.OK || !strings.Contains(c.Detail, missing) || c.Code != reasons.SelfCheckFailed {
		t.Errorf("a file that does not read passed or was not named: %+v", c)
	}
	if c := ownHardlink(dir); !c.OK {
		t.Errorf("a hard link in a writable dir: %+v", c)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("own_hardlink left files behind: %v", entries)
	}
	if c := ownHardlink(filepath.Join(dir, "no-such-dir")); c.OK || c.Code != reasons.SelfCheckFailed {
		t.Errorf("a dir the run cannot write in passed: %+v", c)
	}
	if c := ownPTY(); !c.OK {
		t.Errorf("a terminal made here (no sandbox around the test) did not open: %+v", c)
	}
}
