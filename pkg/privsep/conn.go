// Package privsep is the channel between anetd and its helpers (anet-sandboxd, anet-egress):
// one AF_UNIX socketpair per helper, the helper's end as its fd 3.
//
// A message is a JSON document with a protocol version, an id, a type (request, response,
// event) and a body. File descriptors ride along as SCM_RIGHTS. A message larger than
// MaxMessage is refused on send with ErrTooLarge and detected on receive, never silently cut.
// Big payloads belong in a passed fd.
//
// Two framings carry messages, chosen by the socket's type and behind the one Conn:
//   - SOCK_SEQPACKET (Linux): the kernel keeps message boundaries, so a message is one
//     packet; an oversized packet is seen as MSG_TRUNC.
//   - SOCK_STREAM (macOS, which has no AF_UNIX SEQPACKET, and the BSDs): each message is a
//     4-byte big-endian length and the document. Descriptors are attached to the frame's
//     first byte and a frame is read exactly (header, then body), so they arrive with the
//     header of the message they belong to and never with a neighbour. A frame longer than
//     MaxMessage is read and dropped whole, so the stream stays in step, as a packet would.
//
// Socketpair makes the platform's kind; FromFD accepts either.
package privsep

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	f      *os.File
	rc     syscall.RawConn
	stream bool // SOCK_STREAM with length framing; else SOCK_SEQPACKET
	wmu    sync.Mutex
	buf    []byte
	oob    []byte
}

// frameHeader is the length prefix of a message on a SOCK_STREAM socket.
const frameHeader = 4

// Socketpair makes a connected pair of the platform's kind (SEQPACKET on Linux, STREAM
// elsewhere) with close-on-exec set on both ends: the parent keeps the Conn, the child's end
// is handed to exactly one helper through ExtraFiles.
func Socketpair() (*Conn, *os.File, error) { return socketpairOf(socketType) }

// socketType is the kind Socketpair makes; tests run the helper path over both kinds.
var socketType = platformSocketType

func socketpairOf(typ int) (*Conn, *os.File, error) {
	fds, err := cloexecSocketpair(typ)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	c, err := newConn(fds[0], "privsep-parent", typ)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c, os.NewFile(uintptr(fds[1]), "privsep-child"), nil
}

// FromFD wraps an inherited descriptor (fd 3 in a helper): a SEQPACKET or STREAM unix socket.
func FromFD(fd uintptr) (*Conn, error) {
	typ, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, fmt.Errorf("fd %d is not a socket: %w", fd, err)
	}
	if typ != unix.SOCK_SEQPACKET && typ != unix.SOCK_STREAM {
		return nil, fmt.Errorf("fd %d is not a SEQPACKET or STREAM socket", fd)
	}
	unix.CloseOnExec(int(fd))
	return newConn(int(fd), "privsep", typ)
}

func newConn(fd int, name string, typ int) (*Conn, error) {
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
	return &Conn{f: f, rc: rc, stream: typ == unix.SOCK_STREAM, buf: make([]byte, MaxMessage+1), oob: make([]byte, unix.CmsgSpace(maxFDs*4))}, nil
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

// sendRaw writes one message as it is, without Send's checks (tests use it to play a
// misbehaving peer). On a stream it writes the length prefix first.
func (c *Conn) sendRaw(data, oob []byte, what string) error {
	if !c.stream {
		n, err := c.sendmsg(data, oob)
		if err != nil {
			return fmt.Errorf("privsep send %s: %w", what, err)
		}
		if n != len(data) {
			return fmt.Errorf("privsep send %s: short write %d of %d", what, n, len(data))
		}
		return nil
	}
	frame := make([]byte, frameHeader+len(data))
	binary.BigEndian.PutUint32(frame, uint32(len(data)))
	copy(frame[frameHeader:], data)
	// The descriptors go with the first bytes; a stream may take the rest in several writes.
	for len(frame) > 0 {
		n, err := c.sendmsg(frame, oob)
		if err != nil {
			return fmt.Errorf("privsep send %s: %w", what, err)
		}
		frame, oob = frame[n:], nil
	}
	return nil
}

func (c *Conn) sendmsg(data, oob []byte) (int, error) {
	var n int
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), data, oob, nil, sendFlags)
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	return n, err
}

// Recv reads one message. io.EOF means the other end closed (or this end was closed).
func (c *Conn) Recv() (*Message, []*os.File, error) {
	var n int
	var files []*os.File
	var err error
	if c.stream {
		n, files, err = c.recvFrame()
	} else {
		n, files, err = c.recvPacket()
	}
	if err != nil {
		return nil, nil, err
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

// recvmsg reads into p, returning the descriptors that came with the bytes.
func (c *Conn) recvmsg(p []byte) (int, []*os.File, error) {
	var n, oobn, flags int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), p, c.oob, recvFlags)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, unix.ECONNRESET) {
			return 0, nil, errEOF
		}
		return 0, nil, fmt.Errorf("privsep recv: %w", err)
	}
	files, ferr := parseRights(c.oob[:oobn])
	if flags&unix.MSG_CTRUNC != 0 {
		closeAll(files)
		return 0, nil, fmt.Errorf("privsep: too many descriptors in one message (at most %d)", maxFDs)
	}
	if ferr != nil {
		closeAll(files)
		return 0, nil, ferr
	}
	if !c.stream && flags&unix.MSG_TRUNC != 0 {
		closeAll(files)
		return 0, nil, ErrTooLarge
	}
	return n, files, nil
}

func (c *Conn) recvPacket() (int, []*os.File, error) {
	n, files, err := c.recvmsg(c.buf)
	if err != nil {
		return 0, nil, err
	}
	if n == 0 {
		// A zero-length read on SEQPACKET is how a closed peer reads.
		closeAll(files)
		return 0, nil, errEOF
	}
	if n > MaxMessage {
		closeAll(files)
		return 0, nil, ErrTooLarge
	}
	return n, files, nil
}

// recvFrame reads one length-prefixed frame exactly: never a byte of the next one, so no
// descriptor of the next message is taken with this one.
func (c *Conn) recvFrame() (int, []*os.File, error) {
	var hdr [frameHeader]byte
	files, err := c.readFull(hdr[:], true)
	if err != nil {
		return 0, nil, err
	}
	size := int64(binary.BigEndian.Uint32(hdr[:]))
	if size > MaxMessage {
		// Drop the whole frame so the next one is read from its start.
		more, err := c.discard(size)
		closeAll(append(files, more...))
		if err != nil {
			return 0, nil, err
		}
		return 0, nil, ErrTooLarge
	}
	more, err := c.readFull(c.buf[:size], false)
	files = append(files, more...)
	if err != nil {
		closeAll(files)
		return 0, nil, err
	}
	if len(files) > maxFDs {
		closeAll(files)
		return 0, nil, fmt.Errorf("privsep: too many descriptors in one message (at most %d)", maxFDs)
	}
	return int(size), files, nil
}

// readFull fills p. EOF before the first byte is io.EOF when atStart (a clean close between
// messages), io.ErrUnexpectedEOF otherwise.
func (c *Conn) readFull(p []byte, atStart bool) ([]*os.File, error) {
	var files []*os.File
	got := 0
	for got < len(p) {
		n, fs, err := c.recvmsg(p[got:])
		files = append(files, fs...)
		if err == nil && n == 0 {
			err = errEOF
		}
		if err != nil {
			closeAll(files)
			if errors.Is(err, io.EOF) && (got > 0 || !atStart) {
				return nil, fmt.Errorf("privsep: connection closed inside a message: %w", io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		got += n
	}
	return files, nil
}

// discard reads and drops n bytes.
func (c *Conn) discard(n int64) ([]*os.File, error) {
	var files []*os.File
	for n > 0 {
		chunk := c.buf[:min(n, int64(len(c.buf)))]
		fs, err := c.readFull(chunk, false)
		files = append(files, fs...)
		if err != nil {
			closeAll(files)
			return nil, err
		}
		n -= int64(len(chunk))
	}
	return files, nil
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
			// Linux receives with MSG_CMSG_CLOEXEC; other platforms have no such flag, so
			// set it here (a fork in between is covered by the helpers' start-up marking
			// every inherited fd close-on-exec).
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
