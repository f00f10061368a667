package privsep

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/reasons"
)

// The test binary doubles as a helper: with ANET_PRIVSEP_TEST_HELPER set it serves fd 3.
func TestMain(m *testing.M) {
	if os.Getenv("ANET_PRIVSEP_TEST_HELPER") == "1" {
		err := ServeHelper(context.Background(), "testhelper", map[string]Handler{
			"env": func(context.Context, *Request) (Reply, error) {
				return Reply{Body: os.Environ()}, nil
			},
			"fds": func(context.Context, *Request) (Reply, error) {
				ents, err := os.ReadDir("/proc/self/fd")
				if err != nil {
					return Reply{}, err
				}
				var names []string
				for _, e := range ents {
					l, _ := os.Readlink("/proc/self/fd/" + e.Name())
					names = append(names, e.Name()+"="+l)
				}
				return Reply{Body: names}, nil
			},
		}, func() map[string]any { return map[string]any{"hello": "world"} }, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// transports are the two framings; every Conn test runs over both on Linux.
var transports = []struct {
	name string
	typ  int
}{
	{"seqpacket", unix.SOCK_SEQPACKET},
	{"stream", unix.SOCK_STREAM},
}

func forEachTransport(t *testing.T, f func(t *testing.T, typ int)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { f(t, tr.typ) })
	}
}

func pair(t *testing.T, typ int) (*Conn, *Conn) {
	t.Helper()
	a, childFile, err := socketpairOf(typ)
	if err != nil {
		t.Fatal(err)
	}
	// FromFD takes the descriptor over; a duplicate keeps childFile's finalizer off it.
	fd, err := unix.Dup(int(childFile.Fd()))
	childFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromFD(uintptr(fd))
	if err != nil {
		t.Fatal(err)
	}
	if b.stream != (typ == unix.SOCK_STREAM) {
		t.Fatalf("FromFD on a socket of type %d: stream framing = %v", typ, b.stream)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func tempFileWith(t *testing.T, content string) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(content)
	t.Cleanup(func() { f.Close() })
	return f
}

func readAllAt(f *os.File) string {
	buf := make([]byte, 64)
	n, _ := f.ReadAt(buf, 0)
	return string(buf[:n])
}

func TestMessageRoundTripAndFD(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		f := tempFileWith(t, "passed through SCM_RIGHTS")
		if err := a.Send(&Message{ID: 7, Type: TypeRequest, Method: "m", Body: []byte(`{"a":1}`)}, f); err != nil {
			t.Fatal(err)
		}
		m, files, err := b.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != 7 || m.Method != "m" || string(m.Body) != `{"a":1}` || m.V != Version {
			t.Fatalf("Recv = %+v", m)
		}
		if len(files) != 1 {
			t.Fatalf("Recv files = %d, want 1", len(files))
		}
		flags, err := fcntlFlags(files[0])
		if err != nil || flags&syscall.FD_CLOEXEC == 0 {
			t.Fatalf("received fd has no close-on-exec (flags %v, err %v)", flags, err)
		}
		if got := readAllAt(files[0]); got != "passed through SCM_RIGHTS" {
			t.Fatalf("passed fd reads %q", got)
		}
	})
}

// Descriptors arrive with their own message, never with a neighbour's, even when several
// messages wait in the socket at once (the stream framing's promise).
func TestDescriptorsStayWithTheirMessage(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		one, three := tempFileWith(t, "one"), tempFileWith(t, "three")
		for i, files := range [][]*os.File{{one}, nil, {three, one}} {
			if err := a.Send(&Message{ID: uint64(i + 1), Type: TypeEvent, Method: "m"}, files...); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []struct {
			id    uint64
			files []string
		}{{1, []string{"one"}}, {2, nil}, {3, []string{"three", "one"}}} {
			m, files, err := b.Recv()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				got = append(got, readAllAt(f))
				f.Close()
			}
			if m.ID != want.id || strings.Join(got, ",") != strings.Join(want.files, ",") {
				t.Fatalf("message %d came with files %q, want message %d with %q", m.ID, got, want.id, want.files)
			}
		}
	})
}

func TestMessageTooLarge(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, _ := pair(t, typ)
		big := make([]byte, MaxMessage)
		for i := range big {
			big[i] = 'a'
		}
		err := a.Send(&Message{Type: TypeEvent, Method: "big", Body: []byte(`"` + string(big) + `"`)})
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Send(oversized) = %v, want ErrTooLarge", err)
		}
		if !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("error %q does not say what is wrong", err)
		}
	})
}

// A peer that writes a raw oversized message (bypassing Send's check) is detected on receive,
// its descriptors are closed, and the next message reads normally.
func TestRecvDetectsOversizedMessage(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		raw := make([]byte, MaxMessage+100)
		f := tempFileWith(t, "x")
		if err := a.sendRaw(raw, unix.UnixRights(int(f.Fd())), "raw"); err != nil {
			t.Fatal(err)
		}
		if err := a.Send(&Message{ID: 2, Type: TypeEvent, Method: "after"}); err != nil {
			t.Fatal(err)
		}
		if _, files, err := b.Recv(); !errors.Is(err, ErrTooLarge) || files != nil {
			t.Fatalf("Recv(oversized) = %v with %d files, want ErrTooLarge and none", err, len(files))
		}
		if m, _, err := b.Recv(); err != nil || m.ID != 2 {
			t.Fatalf("Recv after the oversized message = %+v, %v; want message 2", m, err)
		}
	})
}

// More descriptors than one message may carry are refused, not half-delivered.
func TestTooManyDescriptorsRefused(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		f := tempFileWith(t, "x")
		fds := make([]int, maxFDs+1)
		for i := range fds {
			fds[i] = int(f.Fd())
		}
		if err := a.sendRaw([]byte(`{"v":1,"type":"event","method":"m"}`), unix.UnixRights(fds...), "raw"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Recv(); err == nil || !strings.Contains(err.Error(), "too many descriptors") {
			t.Fatalf("Recv(%d fds) = %v, want a refusal", len(fds), err)
		}
	})
}

func TestVersionMismatchRefused(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		if err := a.sendRaw([]byte(`{"v":99,"type":"event","method":"x"}`), nil, "raw"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.Recv(); err == nil || !strings.Contains(err.Error(), "version 99") {
			t.Fatalf("Recv(v99) = %v, want a version error", err)
		}
	})
}

// Closing one end is io.EOF on the other, between messages; a stream cut inside a frame is
// an unexpected EOF, never a short message.
func TestEOF(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		a.Close()
		if _, _, err := b.Recv(); !errors.Is(err, io.EOF) {
			t.Fatalf("Recv after the peer closed = %v, want io.EOF", err)
		}
	})
	t.Run("stream cut inside a frame", func(t *testing.T) {
		a, b := pair(t, unix.SOCK_STREAM)
		// A header announcing 100 bytes, 10 of them, then the end.
		frame := append([]byte{0, 0, 0, 100}, []byte(`{"v":1,"ty`)...)
		if _, err := a.sendmsg(frame, nil); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if _, _, err := b.Recv(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Recv of a cut frame = %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

func TestCallAndErrorCodes(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		a, b := pair(t, typ)
		server := NewPeer(b, map[string]Handler{
			"echo": func(_ context.Context, r *Request) (Reply, error) { return Reply{Body: r.Body}, nil },
			"fail": func(context.Context, *Request) (Reply, error) {
				return Reply{}, reasons.New(reasons.SandboxUnavailable, "probe failed")
			},
		}, nil, nil)
		client := NewPeer(a, nil, nil, nil)
		ctx := context.Background()
		go server.Run(ctx)
		go client.Run(ctx)
		var out map[string]int
		if _, err := client.Call(ctx, "echo", map[string]int{"n": 3}, &out); err != nil || out["n"] != 3 {
			t.Fatalf("Call(echo) = %v, %v", out, err)
		}
		_, err := client.Call(ctx, "fail", nil, nil)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != reasons.SandboxUnavailable {
			t.Fatalf("Call(fail) = %v, want code sandbox_unavailable", err)
		}
		_, err = client.Call(ctx, "nope", nil, nil)
		if !errors.As(err, &pe) || pe.Code != reasons.BadRequest {
			t.Fatalf("Call(nope) = %v, want bad_request", err)
		}
	})
}

// startTestHelper starts the test binary as a helper over a socketpair of type typ.
func startTestHelper(t *testing.T, typ int) *Supervisor {
	t.Helper()
	saved := socketType
	socketType = typ
	t.Cleanup(func() { socketType = saved })
	return startTestHelperWith(t, HelperSpec{})
}

// startTestHelperWith starts the test helper with spec's liveness settings.
func startTestHelperWith(t *testing.T, spec HelperSpec) *Supervisor {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A descriptor the daemon inherited without close-on-exec must not reach the helper.
	leakPath := t.TempDir() + "/inherited-not-cloexec"
	fd, err := syscall.Open(leakPath, syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	t.Setenv("ANET_SECRET_IN_PARENT", "must-not-leak")
	s := StartHelper(context.Background(), HelperSpec{
		Name:       "testhelper",
		Path:       self,
		Env:        []string{"ANET_PRIVSEP_TEST_HELPER=1", "PATH=/usr/bin:/bin"},
		MinBackoff: 50 * time.Millisecond,
		PingEvery:  spec.PingEvery, PingTimeout: spec.PingTimeout, KillAfter: spec.KillAfter,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { s.Stop(context.Background()) })
	waitState(t, s, StateRunning)
	return s
}

func waitState(t *testing.T, s *Supervisor, want State) Status {
	t.Helper()
	var st Status
	if !testkit.Until(testkit.Wait, func() bool { st = s.Status(); return st.State == want }) {
		t.Fatalf("helper state = %s, want %s", st.State, want)
	}
	return st
}

// C3, docs/architecture.md rule 2: a helper sees only the environment named in code and fds 0-3.
func TestHelperStartsClean(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		s := startTestHelper(t, typ)
		var env []string
		if _, err := s.Call(context.Background(), "env", nil, &env); err != nil {
			t.Fatal(err)
		}
		if strings.Join(env, "\n") != "ANET_PRIVSEP_TEST_HELPER=1\nPATH=/usr/bin:/bin" {
			t.Fatalf("helper environment = %q, want exactly the two named variables", env)
		}
		var fds []string
		if _, err := s.Call(context.Background(), "fds", nil, &fds); err != nil {
			t.Fatal(err)
		}
		// Beyond 0-3, only what the helper's own runtime opened may be there (epoll, eventfd,
		// cgroup cpu files, the directory being listed): no regular file, pipe or socket.
		for _, fd := range fds {
			num, target, _ := strings.Cut(fd, "=")
			switch num {
			case "0":
				if target != "/dev/null" {
					t.Errorf("fd 0 = %s, want /dev/null", target)
				}
			case "1", "2":
				if !strings.HasPrefix(target, "pipe:") {
					t.Errorf("fd %s = %s, want the log pipe", num, target)
				}
			case "3":
				if !strings.HasPrefix(target, "socket:") {
					t.Errorf("fd 3 = %s, want the protocol socket", target)
				}
			default:
				if !(target == "" /* the listing fd, closed by now */ || strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "/sys/fs/cgroup/") || strings.HasPrefix(target, "/proc/")) {
					t.Errorf("helper has inherited fd %s = %s", num, target)
				}
			}
		}
		if st := s.Status(); st.Info["hello"] != "world" {
			t.Fatalf("hello info = %v", st.Info)
		}
	})
}

// Fail closed while down, restart with back-off after a crash.
func TestHelperRestartAfterKill(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		s := startTestHelper(t, typ)
		pid := s.Status().PID
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := s.Status()
			if st.State == StateRunning && st.PID != pid {
				if st.Restarts != 1 || !strings.Contains(st.LastError, "killed") {
					t.Fatalf("after kill: restarts=%d last_error=%q, want 1 and a kill", st.Restarts, st.LastError)
				}
				break
			}
			if st.State != StateRunning {
				if _, err := s.Peer(); err == nil {
					t.Fatalf("Peer() succeeded while helper is %s", st.State)
				} else if re := (*reasons.Error)(nil); !errors.As(err, &re) || re.Code != reasons.HelperDown {
					t.Fatalf("Peer() while down = %v, want helper_down", err)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("helper not restarted: %+v", st)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// A helper exits on EOF of fd 3 (the parent closing or dying).
func TestHelperExitsOnEOF(t *testing.T) {
	forEachTransport(t, func(t *testing.T, typ int) {
		s := startTestHelper(t, typ)
		pid := s.Status().PID
		s.Stop(context.Background())
		if st := s.Status(); st.State != StateStopped {
			t.Fatalf("state after Stop = %s", st.State)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("helper pid %d still exists after Stop (kill 0 = %v)", pid, err)
		}
	})
}

func fcntlFlags(f *os.File) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFD, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
