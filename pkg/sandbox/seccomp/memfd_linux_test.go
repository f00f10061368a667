package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteMemfd checks the memfd bwrap reads: content, offset 0, close-on-exec here, and
// sealed so nobody holding the fd can rewrite the program (S4).
func TestWriteMemfd(t *testing.T) {
	progs := filters(t)
	for i, prog := range progs {
		f, err := WriteMemfd(prog)
		if err != nil {
			t.Fatalf("WriteMemfd(prog %d): %v", i, err)
		}
		defer f.Close()
		got, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(got, prog) {
			t.Errorf("read back prog %d = %d bytes (err %v), want the %d written", i, len(got), err, len(prog))
		}
		seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
		want := unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
		if err != nil || seals != want {
			t.Errorf("F_GET_SEALS = %#x (err %v), want %#x", seals, err, want)
		}
		if _, err := f.WriteAt([]byte{0}, 0); !errors.Is(err, unix.EPERM) {
			t.Errorf("write to sealed memfd: err %v, want EPERM", err)
		}
		if err := f.Truncate(0); !errors.Is(err, unix.EPERM) {
			t.Errorf("truncate sealed memfd: err %v, want EPERM", err)
		}
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("F_GETFD = %#x (err %v), want FD_CLOEXEC (ExtraFiles clears it for the child only)", flags, err)
		}
	}
}

func TestWriteMemfdRejectsBadProgram(t *testing.T) {
	for _, c := range []struct {
		name string
		prog []byte
	}{
		{"empty", nil},
		{"not_multiple_of_8", make([]byte, 12)},
		{"too_long", make([]byte, 8*(maxInsns+1))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if f, err := WriteMemfd(c.prog); err == nil {
				f.Close()
				t.Errorf("WriteMemfd(%d bytes) = nil error, want a refusal", len(c.prog))
			}
		})
	}
}

// TestBwrapLoadsMemfds hands both memfds to the real bwrap with --add-seccomp-fd, the way
// the launcher does, and runs the probe child inside: the kernel must report two filters and
// every probe must get the filter's errno (L1, S4).
func TestBwrapLoadsMemfds(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatalf("bwrap not found (install bubblewrap): %v", err)
	}
	progs := filters(t)
	var files []*os.File
	for _, p := range progs {
		f, err := WriteMemfd(p)
		if err != nil {
			t.Fatalf("WriteMemfd: %v", err)
		}
		defer f.Close()
		files = append(files, f)
	}
	cmd := exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
		"--add-seccomp-fd", "3", "--add-seccomp-fd", "4",
		"--", os.Args[0], "-test.run=^$")
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), childEnv+"=probes-plain")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bwrap probe child: %v; stderr: %s", err, stderr.String())
	}
	res := map[string]string{}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&res); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	for _, p := range probes() {
		if p.want == 0 {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			if got, want := res[p.name], unix.ErrnoName(p.want); got != want {
				t.Errorf("%s inside bwrap = %s, want %s", p.name, got, want)
			}
		})
	}
	// A second run needs fresh memfds: bwrap read the first pair to EOF.
	files = files[:0]
	for _, p := range progs {
		f, err := WriteMemfd(p)
		if err != nil {
			t.Fatalf("WriteMemfd: %v", err)
		}
		defer f.Close()
		files = append(files, f)
	}
	cmd = exec.Command(bwrap, "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc",
		"--add-seccomp-fd", "3", "--add-seccomp-fd", "4", "--", "cat", "/proc/self/status")
	cmd.ExtraFiles = files
	out, err = cmd.Output()
	if err != nil {
		t.Fatalf("bwrap cat /proc/self/status: %v", err)
	}
	for _, want := range []string{"NoNewPrivs:\t1\n", "Seccomp:\t2\n", "Seccomp_filters:\t2\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("/proc/self/status inside bwrap lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
}
