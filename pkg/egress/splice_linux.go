package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Both directions of a tunnel move bytes with splice(2) through a pipe of their own: socket →
// pipe → socket, whichever of TCP and unix each end is, with no copy through user space (Go's
// own ReadFrom splices only into TCP sockets, so the upstream → agent direction used to be a
// buffered copy into the unix endpoint socket).
//
// The run's byte allowance stays exact: a transfer reserves at most what the allowance has
// left and moves at most that many bytes out of the source socket, and the reservation is held
// only for the one non-blocking splice call, never while waiting for data.

// pipeSize is what each pipe asks for: up to 1 MiB moved per wake-up. An unprivileged process
// may be given less (fs.pipe-max-size, fs.pipe-user-pages-soft); it keeps what it gets.
const pipeSize = maxChunk

// splicedBytes counts bytes moved by splice, for tests that check the zero-copy path is taken.
// Each splicer adds its count once, when it closes: no atomic shared by every tunnel is
// touched per chunk.
var splicedBytes atomic.Int64

// splicer is one direction's pipe.
type splicer struct {
	r, w  int // the pipe's read and write ends
	size  int
	moved int64 // bytes spliced through; only the pump's goroutine touches it
}

// newSplicer makes a pipe for a splice between src and dst, or returns nil when either is not
// a kernel stream socket (a wrapped or TLS connection): those are copied through a buffer.
func newSplicer(dst, src net.Conn) *splicer {
	if !spliceable(dst) || !spliceable(src) {
		return nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil
	}
	s := &splicer{r: p[0], w: p[1]}
	size, err := unix.FcntlInt(uintptr(s.w), unix.F_SETPIPE_SZ, pipeSize)
	if err != nil {
		size, err = unix.FcntlInt(uintptr(s.w), unix.F_GETPIPE_SZ, 0)
	}
	if err != nil || size <= 0 {
		s.close()
		return nil
	}
	s.size = size
	if u, ok := dst.(*net.UnixConn); ok {
		// A unix stream socket queues to its peer only as much as the sender's buffer holds
		// (208 KiB by default): with room for a whole pipe, one splice empties the pipe, and
		// the reader finds more per wake-up. Where the system caps the size lower
		// (net.core.wmem_max), the kernel keeps the cap, and so do we.
		u.SetWriteBuffer(size)
	}
	return s
}

func spliceable(c net.Conn) bool {
	switch v := c.(type) {
	case *net.TCPConn:
		return true
	case *net.UnixConn:
		return v.LocalAddr().Network() == "unix"
	}
	return false
}

func (s *splicer) close() {
	unix.Close(s.r)
	unix.Close(s.w)
	splicedBytes.Add(s.moved)
}

// splicePump is pump's zero-copy path: src → pipe → dst until EOF, error, idle or the end of
// the allowance. See pump for the meaning of each ending.
func (t *tunnel) splicePump(dir int, dst, src net.Conn, b *budget, s *splicer) {
	defer s.close()
	srcRC, err1 := src.(syscall.Conn).SyscallConn()
	dstRC, err2 := dst.(syscall.Conn).SyscallConn()
	if err := errors.Join(err1, err2); err != nil {
		t.end("", err.Error())
		return
	}
	idle := t.p.limits.IdleTimeout
	for {
		src.SetReadDeadline(time.Now().Add(idle))
		n, eof, spent, err := s.fill(srcRC, b)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if t.idleBoth(dir) {
				t.end("", "idle")
				return
			}
			continue
		case err != nil:
			t.end("", err.Error())
			return
		case spent:
			// The allowance is used up and another byte is waiting (R1: the last allowed
			// byte passed, this one does not).
			t.end(BytesLimit, dirName(dir)+" bytes used up")
			return
		case eof:
			t.halfClose(dir, dst)
			return
		}
		t.moved[dir].Add(n)
		t.idle[dir].Store(false)
		dst.SetWriteDeadline(time.Now().Add(idle))
		if err := s.drain(dstRC, n); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.end("", "the other side stopped reading")
			} else {
				t.end("", err.Error())
			}
			return
		}
		s.moved += n
	}
}

// fill waits until src has data (or EOF), then splices what is queued, at most the pipe's size
// and what the allowance grants, into the empty pipe. spent reports that the allowance is used
// up while a byte is waiting; eof that the peer has finished sending.
func (s *splicer) fill(src syscall.RawConn, b *budget) (n int64, eof, spent bool, err error) {
	var opErr error
	err = src.Read(func(fd uintptr) bool {
		for {
			grant := b.take(int64(s.size), true)
			if grant == 0 {
				// Nothing left to grant: only EOF is still a clean ending.
				var one [1]byte
				m, _, e := unix.Recvfrom(int(fd), one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
				switch {
				case e == unix.EINTR:
					continue
				case e == unix.EAGAIN:
					return false
				case e != nil:
					opErr = e
				case m == 0:
					eof = true
				default:
					spent = true
				}
				return true
			}
			m, e := unix.Splice(int(fd), nil, s.w, nil, int(grant), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			b.settle(grant, max(m, 0))
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return false // no data yet: wait for the poller, holding no reservation
			case e != nil:
				opErr = e
			case m == 0:
				eof = true
			}
			n = m
			return true
		}
	})
	if err == nil {
		err = opErr
	}
	return n, eof, spent, err
}

// drain splices the n bytes in the pipe into dst, waiting for dst to take them.
func (s *splicer) drain(dst syscall.RawConn, n int64) error {
	var opErr error
	err := dst.Write(func(fd uintptr) bool {
		for n > 0 {
			m, e := unix.Splice(s.r, nil, int(fd), nil, int(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			switch {
			case e == unix.EINTR:
				continue
			case e == unix.EAGAIN:
				return false
			case e != nil:
				opErr = e
				return true
			case m == 0:
				opErr = io.ErrNoProgress
				return true
			}
			n -= m
		}
		return true
	})
	if err == nil {
		err = opErr
	}
	return err
}
