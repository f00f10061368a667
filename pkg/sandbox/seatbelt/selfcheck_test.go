//go:build linux

package seatbelt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
)

// noProfile runs argv as it is, with nothing around it: what a host whose sandbox-exec
// enforced nothing would give. The check program is this test binary.
func noProfile(ctx context.Context, _ int, argv []string) ([]byte, string, int, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), roleEnv+"=check")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), errb.String(), ee.ExitCode(), nil
	}
	return out.Bytes(), errb.String(), 0, err
}

// testInput is a self-check of a run whose dirs, operator home and node paths are all
// temporary: nothing of the real home is touched.
func testInput(t *testing.T) checkInput {
	t.Helper()
	d := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(d, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hidden := filepath.Join(mk("home/.local/share/anet"), "anet.db")
	if err := os.WriteFile(hidden, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside, err := net.Listen("tcp", "127.0.0.1:0") // "beyond the machine", on loopback only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Close() })
	go func() {
		for {
			c, err := outside.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	node, _ := exec.LookPath("node")
	// launchctl with nothing enforcing: submit runs the job, remove finds it.
	launchctl := filepath.Join(d, "launchctl")
	if err := os.WriteFile(launchctl, []byte(fakeLaunchctl), 0o700); err != nil {
		t.Fatal(err)
	}
	// Beyond the machine, on loopback only: a UDP listener and a name server that answers.
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	return checkInput{
		Home: mk("runs/r1/home"), Tmp: mk("runs/r1/tmp"), Work: mk("work/aid/ix"),
		OperatorHome: mk("home"), UserTemp: mk("usertmp"), Hidden: []string{hidden},
		Self: self, Node: node, NodeMissing: node == "", Agent: "/bin/echo",
		Keychain: "/bin/true", Setuid: []string{"/usr/bin/id", "-u"}, External: outside.Addr().String(),
		Services: true, Launchctl: launchctl, OperatorTTYs: true,
		UDP: []string{udp.LocalAddr().String()}, DNSName: "anet-selfcheck.example", DNSServers: []string{nameServer(t)},
		Tools: defaultTools(false, ""), Peer: noProfile,
	}
}

const fakeLaunchctl = `#!/bin/sh
case "$1" in
submit) touch "$0.job"; shift 3; [ "$1" = -- ] && shift; "$@" & exit 0 ;;
remove) [ -e "$0.job" ] && rm "$0.job" ;;
*) exit 64 ;;
esac
`

// nameServer answers every A query on loopback with 192.0.2.1, and every other query with
// no answer: the name server a run must not reach.
func nameServer(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			end := 12
			for end < n && q[end] != 0 {
				end += int(q[end]) + 1
			}
			end += 5 // the root label, type, class
			if n < 12 || end > n {
				continue
			}
			resp := append([]byte{}, q[:end]...)
			resp[2], resp[3] = 0x81, 0x80 // a response, recursion available, no error
			resp[10], resp[11] = 0, 0     // the query's EDNS record is not echoed
			if q[end-4] == 0 && q[end-3] == 1 {
				resp[7] = 1 // one answer: the name, A, IN, TTL 60, 192.0.2.1
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1)
			}
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}

// M1, S2, S3, F3: run on a host whose profile enforces nothing (the items in a plain
// process), every item that guards something must fail, for what it saw: the self-check
// cannot pass a sandbox that is not there. The items that prove the run can still work
// (its own dirs, its endpoint, node, the agent) pass.
func TestSelfCheckFailsWithoutTheProfileM1(t *testing.T) {
	in := testInput(t)
	checks, err := selfCheck(context.Background(), in, noProfile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		ok     bool
		detail string
	}{
		ItemProfile:     {true, "compiles"},
		ItemWriteInside: {true, "wrote and removed"},
		ItemWriteOut:    {false, "outside the run's dirs"},
		ItemSecrets:     {false, "opened"},
		ItemHardlink:    {false, "hard-linked"},
		ItemKeychain:    {false, "dump-keychain succeeded"},
		ItemEndpoint:    {true, "and back"},
		ItemEndpoint6:   {true, "held by the node"},
		ItemDecoyPort:   {false, "connected to 127.0.0.1:"},
		ItemDecoyPort6:  {false, "connected to [::1]:"},
		ItemDecoySocket: {false, "connected to /tmp/"},
		ItemExternal:    {false, "connected to 127.0.0.1:"},
		ItemUDP:         {false, "sent a UDP datagram to 127.0.0.1:"},
		ItemDNS:         {false, "anet-selfcheck.example resolved to 192.0.2.1"},
		ItemSignal:      {false, "may signal process"},
		ItemPeer:        {false, "of another sandbox"},
		ItemServices:    {false, "the profile allows mach-lookup com.apple.coreservices.launchservicesd"},
		ItemLaunchd:     {false, "launchctl submit succeeded"},
		ItemTTY:         {false, "opened /dev/pts/"},
		ItemOwnPTY:      {true, "a terminal the run made opens (/dev/pts/"},
		ItemOwnLink:     {true, "a hard link inside the run's own dir works"},
		ItemSetuid:      {false, "/usr/bin/id -u"},
		ItemNode:        {true, ""},
		ItemAgent:       {true, "echo: echo (GNU coreutils)"},
		ItemTools:       {true, "sh: x"},
		ItemDecoyHits:   {false, "accepted 2 connection"},
		ItemLaunchdRan:  {false, "it created"},
	}
	got := map[string]check.Check{}
	for _, c := range checks {
		got[c.Name] = c
	}
	for name, w := range want {
		c, ok := got[name]
		switch {
		case !ok:
			t.Errorf("no %s item in %v", name, checks)
		case c.OK != w.ok || !strings.Contains(c.Detail, w.detail):
			t.Errorf("%s = ok %v %q, want ok %v with %q", name, c.OK, c.Detail, w.ok, w.detail)
		case !c.OK && c.Code != reasons.SelfCheckFailed:
			t.Errorf("%s failed with code %q, want %s", name, c.Code, reasons.SelfCheckFailed)
		}
	}
	if len(checks) != len(want) {
		t.Errorf("%d items, want %d: %v", len(checks), len(want), checks)
	}
	// Nothing the check wrote outside is left behind, and the planted secrets are gone.
	for _, d := range []string{in.OperatorHome, in.UserTemp, in.Work} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".anet-selfcheck") {
				t.Errorf("%s left in %s", e.Name(), d)
			}
		}
	}
}

// M1: a check program that gives no readable answer fails every item it was to run (a
// profile too narrow for it, a crash): missing is never passing. sandbox-exec's own error
// (a profile that does not compile) fails the profile item with its message.
func TestSelfCheckWithoutAnswersFailsM1(t *testing.T) {
	in := testInput(t)
	broken := func(_ context.Context, _ int, argv []string) ([]byte, string, int, error) {
		if argv[0] == "/usr/bin/true" {
			return nil, "sandbox-exec: syntax error near (allow\n", 65, nil
		}
		return []byte("not json"), "Abort trap: 6\n", 134, nil
	}
	in.Peer = broken
	checks, err := selfCheck(context.Background(), in, broken)
	if err != nil {
		t.Fatal(err)
	}
	// The host side's decoy_unreached and launchd_unstarted pass: nothing ran to reach them.
	if rep := check.New(checks...); rep.OK || rep.Failed() != len(checks)-2 {
		t.Fatalf("report = %+v: want every item failed but the host side's decoy_unreached and launchd_unstarted", rep)
	}
	if c := checks[0]; c.Name != ItemProfile || !strings.Contains(c.Detail, "sandbox-exec: syntax error") {
		t.Fatalf("first item = %+v, want the profile item with sandbox-exec's message", c)
	}
	for _, c := range checks[1:] {
		switch c.Name {
		case ItemDecoyHits, ItemLaunchdRan:
			if !c.OK {
				t.Errorf("%s = %q, want a pass", c.Name, c.Detail)
			}
		case ItemPeer:
			if !strings.Contains(c.Detail, "exited before writing its pid") {
				t.Errorf("%s = %q, want the sleeper's failure", c.Name, c.Detail)
			}
		default:
			if !strings.Contains(c.Detail, "no result from the check program") {
				t.Errorf("%s = %q, want no result", c.Name, c.Detail)
			}
		}
	}
}

// Only EPERM, the sandbox's own refusal, counts as blocked; a missing file or a kernel
// refusal is something else.
func TestDeniedBySandbox(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EPERM}, true},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EPERM)}, true},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, false},
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{fmt.Errorf("wrapped: %w", syscall.EPERM), true},
	} {
		if got := deniedBySandbox(c.err); got != c.want {
			t.Errorf("deniedBySandbox(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
