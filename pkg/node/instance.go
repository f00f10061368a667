package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

// AlreadyRunning refuses a second anetd for the same data or runtime directory (U2).
const AlreadyRunning reasons.Code = "anetd_running"

func init() {
	reasons.Register(reasons.Entry{Code: AlreadyRunning, Kind: reasons.KindNode,
		Text: "another anetd is running", Requirement: "U2"})
}

// lockName is the lock file in the data dir and in the runtime dir. Two locks, because two
// anetd may share one of the directories and not the other (another XDG_RUNTIME_DIR with the
// same data dir, or the reverse); either shared directory is enough to corrupt the other's
// state: the store and chain, or the control socket and token.
const lockName = "anetd.lock"

// instanceLock is the one-anetd-per-directory guard (U2), held for the daemon's life. The
// kernel drops a flock when its process dies, however it dies, so a crash leaves no stale
// lock to clean up by hand.
type instanceLock struct{ files []*os.File }

// lockInstance takes both locks before anything else of the node's state is touched. A
// second anetd gets AlreadyRunning, naming the holder's pid and control socket, and changes
// nothing: not the token, not the socket, not the chain.
func lockInstance(p config.Paths) (*instanceLock, error) {
	l := &instanceLock{}
	for _, dir := range []string{p.DataDir, p.RuntimeDir} {
		f, err := lockFile(filepath.Join(dir, lockName))
		if err != nil {
			l.release()
			var busy errBusy
			if errors.As(err, &busy) {
				pid := "unknown"
				if busy.pid > 0 {
					pid = strconv.Itoa(busy.pid)
				}
				return nil, reasons.New(AlreadyRunning, fmt.Sprintf("pid %s, control socket %s", pid, p.ControlSocket()))
			}
			return nil, err
		}
		l.files = append(l.files, f)
	}
	// The holder's pid in each file is for the message above; the lock is the flock.
	for _, f := range l.files {
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
	}
	return l, nil
}

type errBusy struct{ pid int }

func (e errBusy) Error() string { return "locked" }

func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("instance lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b := make([]byte, 32)
			n, _ := f.ReadAt(b, 0)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
			return nil, errBusy{pid: pid}
		}
		return nil, fmt.Errorf("instance lock %s: %w", path, err)
	}
	return f, nil
}

// release drops the locks. The files stay: removing them would let a third anetd lock a new
// file while a second still waits on the old one.
func (l *instanceLock) release() {
	for _, f := range l.files {
		f.Close()
	}
	l.files = nil
}
