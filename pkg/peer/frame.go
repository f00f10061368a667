package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"anet.dev/anet/pkg/canonical"
	"anet.dev/anet/pkg/reasons"
)

// ackTag starts every ack.
const ackTag = "anet-ack-v1"

// maxDetail bounds the human text of an ack.
const maxDetail = 1024

// Status is an ack's verdict.
type Status string

// Ack statuses. Accepted and Duplicate both mean the receiver holds the message.
const (
	StatusAccepted  Status = "accepted"
	StatusDuplicate Status = "duplicate"
	StatusRefused   Status = "refused"
)

// Ack is the receiver's answer to one message frame.
type Ack struct {
	Status Status
	ID     string       // the message id answered, "" when the frame could not be parsed
	Code   reasons.Code // "" when accepted
	Detail string
}

// Delivered reports whether the receiver holds the message (now or from an earlier copy).
func (a Ack) Delivered() bool { return a.Status == StatusAccepted || a.Status == StatusDuplicate }

// Err returns the refusal as a *RefusedError, or nil when delivered.
func (a Ack) Err() error {
	if a.Delivered() {
		return nil
	}
	return &RefusedError{Code: a.Code, Detail: a.Detail}
}

// RefusedError is a message the peer refused, with its code.
type RefusedError struct {
	Code   reasons.Code
	Detail string
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("peer refused the message: %s: %s", e.Code, reasons.Text(e.Code))
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func refused(id string, c reasons.Code, detail string) Ack {
	return Ack{Status: StatusRefused, ID: id, Code: c, Detail: detail}
}

func (a Ack) encode() []byte {
	d := a.Detail
	if len(d) > maxDetail {
		d = d[:maxDetail]
	}
	return canonical.Encode(ackTag, string(a.Status), a.ID, string(a.Code), d)
}

func parseAck(data []byte) (Ack, error) {
	f, err := canonical.Decode(data, ackTag, 4)
	if err != nil {
		return Ack{}, fmt.Errorf("ack: %w", err)
	}
	a := Ack{Status: Status(f[0]), ID: f[1], Code: reasons.Code(f[2]), Detail: f[3]}
	switch a.Status {
	case StatusAccepted, StatusDuplicate, StatusRefused:
	default:
		return Ack{}, fmt.Errorf("ack: status %q unknown", a.Status)
	}
	if a.Status == StatusRefused && a.Code == "" {
		return Ack{}, errors.New("ack: refused without a code")
	}
	return a, nil
}

// FrameTooLargeError is a frame header announcing more than MaxFrame bytes.
type FrameTooLargeError struct{ Size uint32 }

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame: %d bytes, more than the limit of %d", e.Size, MaxFrame)
}

// writeFrame writes a 4-byte big-endian length and the payload in one write.
func writeFrame(w io.Writer, payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxFrame {
		return &TooLargeError{Field: "frame", Size: len(payload), Limit: MaxFrame}
	}
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// readHeader reads a frame's length and checks it against MaxFrame.
func readHeader(r io.Reader) (uint32, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 {
		return 0, errors.New("frame: empty")
	}
	if n > MaxFrame {
		return n, &FrameTooLargeError{Size: n}
	}
	return n, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	n, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("frame body: %w", err)
	}
	return buf, nil
}
