// Package privsep is the channel between anetd and its helpers (anet-sandboxd, anet-egress):
// one socketpair(AF_UNIX, SOCK_SEQPACKET) per helper, the helper's end as its fd 3.
//
// SEQPACKET keeps message boundaries, so a message is one packet: a JSON document with a
// protocol version, an id, a type (request, response, event) and a body. File descriptors ride
// along as SCM_RIGHTS. A packet larger than MaxMessage is refused on send with ErrTooLarge and
// detected on receive (MSG_TRUNC), never silently cut. Big payloads belong in a passed fd.
package privsep

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Version is the protocol version both ends must agree on in the hello exchange.
const Version = 1

// MaxMessage caps one packet. An unprivileged process cannot raise SO_SNDBUF past
// net.core.wmem_max (about 208 KiB by default), and a SEQPACKET message must fit in the send
// buffer, so the cap stays well below that.
const MaxMessage = 128 << 10

// maxFDs caps the descriptors accepted with one message.
const maxFDs = 8

// Message types.
const (
	TypeRequest  = "request"
	TypeResponse = "response"
	TypeEvent    = "event"
)

// Message is one packet.
type Message struct {
	V      int             `json:"v"`
	ID     uint64          `json:"id,omitempty"`
	Type   string          `json:"type"`
	Method string          `json:"method,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// ErrTooLarge is returned for a message over MaxMessage, on either side.
var ErrTooLarge = fmt.Errorf("privsep: message larger than %d bytes", MaxMessage)

// Conn is one end of a helper socketpair. Send is safe for concurrent use; Recv must be
// called from one goroutine. The descriptor is used in place (no dup), so a helper's
// protocol socket stays fd 3 for its whole life and shows as such in /proc/PID/fd.
type Conn struct {
	f   *os.File
	rc  syscall.RawConn
	wmu sync.Mutex
	buf []byte
	oob []byte
}

// Socketpair makes a connected SEQPACKET pair with close-on-exec set on both ends: the
// parent keeps the Conn, the child's end is handed to exactly one helper through ExtraFiles.
func Socketpair() (*Conn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	c, err := newConn(fds[0], "privsep-parent")
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c, os.NewFile(uintptr(fds[1]), "privsep-child"), nil
}

// FromFD wraps an inherited descriptor (fd 3 in a helper).
func FromFD(fd uintptr) (*Conn, error) {
	typ, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("fd %d is not a socket: %w", fd, err)
	}
	if typ != unix.SOCK_SEQPACKET {
		return nil, fmt.Errorf("fd %d is not a SEQPACKET socket", fd)
	}
	unix.CloseOnExec(int(fd))
	return newConn(int(fd), "privsep")
}

func newConn(fd int, name string) (*Conn, error) {
	// Non-blocking before os.NewFile, so the runtime poller owns the descriptor and Close
	// wakes a blocked Recv.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("privsep conn: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("privsep conn: %w", err)
	}
	return &Conn{f: f, rc: rc, buf: make([]byte, MaxMessage+1), oob: make([]byte, unix.CmsgSpace(maxFDs*4))}, nil
}

// Send writes one message with optional descriptors. The descriptors stay open in the
// sender; the receiver gets duplicates.
func (c *Conn) Send(m *Message, files ...*os.File) error {
	if len(files) > maxFDs {
		return fmt.Errorf("privsep: %d descriptors in one message (at most %d)", len(files), maxFDs)
	}
	m.V = Version
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("privsep encode %s: %w", m.Method, err)
	}
	if len(data) > MaxMessage {
		return fmt.Errorf("%w (%s %q is %d bytes)", ErrTooLarge, m.Type, m.Method, len(data))
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.sendRaw(data, oob, m.Method)
}

func (c *Conn) sendRaw(data, oob []byte, what string) error {
	var n int
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), data, oob, nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("privsep send %s: %w", what, err)
	}
	if n != len(data) {
		return fmt.Errorf("privsep send %s: short write %d of %d", what, n, len(data))
	}
	return nil
}

// Recv reads one message. io.EOF means the other end closed (or this end was closed).
func (c *Conn) Recv() (*Message, []*os.File, error) {
	var n, oobn, flags int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), c.buf, c.oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, unix.ECONNRESET) {
			return nil, nil, errEOF
		}
		return nil, nil, fmt.Errorf("privsep recv: %w", err)
	}
	files, ferr := parseRights(c.oob[:oobn])
	if flags&unix.MSG_CTRUNC != 0 {
		closeAll(files)
		return nil, nil, fmt.Errorf("privsep: too many descriptors in one message (at most %d)", maxFDs)
	}
	if ferr != nil {
		closeAll(files)
		return nil, nil, ferr
	}
	if n == 0 {
		// A zero-length read on SEQPACKET is how a closed peer reads.
		closeAll(files)
		return nil, nil, errEOF
	}
	if n > MaxMessage || flags&unix.MSG_TRUNC != 0 {
		closeAll(files)
		return nil, nil, ErrTooLarge
	}
	var m Message
	if err := json.Unmarshal(c.buf[:n], &m); err != nil {
		closeAll(files)
		return nil, nil, fmt.Errorf("privsep: malformed message: %w", err)
	}
	if m.V != Version {
		closeAll(files)
		return nil, nil, fmt.Errorf("privsep: message of protocol version %d (this side speaks %d)", m.V, Version)
	}
	return &m, files, nil
}

// Close closes the connection; the other end reads EOF.
func (c *Conn) Close() error { return c.f.Close() }

func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("privsep: control message: %w", err)
	}
	var files []*os.File
	for _, cm := range msgs {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			// Go's ReadMsgUnix asks for MSG_CMSG_CLOEXEC; set it again so no received
			// descriptor can leak into a child whatever the platform did.
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "privsep-fd"))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
