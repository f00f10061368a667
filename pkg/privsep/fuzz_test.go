package privsep

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// frames joins bodies as a peer writes them on a SOCK_STREAM socket.
func frames(bodies ...string) []byte {
	var out []byte
	for _, b := range bodies {
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// FuzzRecvStream (C3): any bytes a helper writes on a stream socket are read by Recv exactly as a
// plain reader of length-prefixed frames reads them: each frame is one message, one
// malformed-message error or one ErrTooLarge (the oversized frame dropped whole, so the
// stream stays in step), then io.EOF at a frame boundary or io.ErrUnexpectedEOF inside one.
// Every message received is sent again unchanged: send∘recv is a fixpoint.
func FuzzRecvStream(f *testing.F) {
	f.Add(frames(`{"v":1,"id":7,"type":"request","method":"env","body":{"a":[1,2]}}`))
	f.Add(frames(`{"v":2,"type":"event"}`, `{"v":1,"type":"event"}`))
	f.Add(frames(`not json`, ``, `{"v":1,"type":"response","error":{"code":"x","message":"y"}}`))
	f.Add(append(binary.BigEndian.AppendUint32(nil, MaxMessage+1), make([]byte, MaxMessage+1)...))
	f.Add([]byte{0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		w, r := pair(t, unix.SOCK_STREAM)
		go func() {
			w.f.Write(data)
			w.Close()
		}()
		for rest := data; ; {
			m, files, err := r.Recv()
			closeAll(files)
			want, next, end := nextFrame(rest)
			switch {
			case end != nil:
				if !errors.Is(err, end) {
					t.Fatalf("Recv at %d of %d bytes = %v, want %v", len(data)-len(rest), len(data), err, end)
				}
				return
			case want == nil:
				if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("Recv(%x) = %+v, %v, want an error for the frame", rest[:len(rest)-len(next)], m, err)
				}
				if u := binary.BigEndian.Uint32(rest); (u > MaxMessage) != errors.Is(err, ErrTooLarge) {
					t.Fatalf("Recv(frame of %d bytes) = %v, want ErrTooLarge only over %d", u, err, MaxMessage)
				}
			default:
				if err != nil || !sameJSON(t, m, want) {
					t.Fatalf("Recv(%x) = %+v, %v, want %+v", rest[:len(rest)-len(next)], m, err, want)
				}
				resend(t, m)
			}
			rest = next
		}
	})
}

// nextFrame is the reference reader: the message a frame holds (nil: the frame is an
// error), the bytes after it, or the error that ends the stream.
func nextFrame(rest []byte) (*Message, []byte, error) {
	switch {
	case len(rest) == 0:
		return nil, nil, io.EOF
	case len(rest) < frameHeader:
		return nil, nil, io.ErrUnexpectedEOF
	}
	size := binary.BigEndian.Uint32(rest)
	if uint64(len(rest)-frameHeader) < uint64(size) {
		return nil, nil, io.ErrUnexpectedEOF
	}
	body, next := rest[frameHeader:frameHeader+int(size)], rest[frameHeader+int(size):]
	var m Message
	if size > MaxMessage || json.Unmarshal(body, &m) != nil || m.V != Version {
		return nil, next, nil
	}
	return &m, next, nil
}

// FuzzRecvPacket (C3): one SEQPACKET packet is one message, ErrTooLarge over MaxMessage, or a
// malformed-message error, as encoding/json and the version say.
func FuzzRecvPacket(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":7,"type":"request","method":"env","body":{"a":[1,2]}}`))
	f.Add([]byte(`{"v":1,"type":"event","body":null}`))
	f.Add(make([]byte, MaxMessage+1))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > MaxMessage+1 {
			return // an empty packet is how a closed peer reads; a bigger one the kernel refuses
		}
		w, r := pair(t, unix.SOCK_SEQPACKET)
		if err := w.sendRaw(data, nil, "fuzz"); err != nil {
			t.Fatalf("sendRaw(%d bytes) = %v", len(data), err)
		}
		m, files, err := r.Recv()
		closeAll(files)
		var want Message
		switch {
		case len(data) > MaxMessage:
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Recv(packet of %d bytes) = %v, want ErrTooLarge", len(data), err)
			}
		case json.Unmarshal(data, &want) != nil || want.V != Version:
			if err == nil {
				t.Fatalf("Recv(%q) = %+v, want an error", data, m)
			}
		default:
			if err != nil || !sameJSON(t, m, &want) {
				t.Fatalf("Recv(%q) = %+v, %v, want %+v", data, m, err, want)
			}
			resend(t, m)
		}
	})
}

// resend sends m over a fresh pair and wants the same message back.
func resend(t *testing.T, m *Message) {
	t.Helper()
	a, b := pair(t, unix.SOCK_SEQPACKET)
	if err := a.Send(m); err != nil {
		if errors.Is(err, ErrTooLarge) {
			return // encoding/json escapes <, > and & as \u003c…, so a message near the cap may grow past it
		}
		t.Fatalf("Send(Recv(x)) = %v", err)
	}
	back, files, err := b.Recv()
	closeAll(files)
	if err != nil || !sameJSON(t, back, m) {
		t.Fatalf("Recv(Send(%+v)) = %+v, %v", m, back, err)
	}
}

func sameJSON(t *testing.T, x, y *Message) bool {
	t.Helper()
	a, err1 := json.Marshal(x)
	b, err2 := json.Marshal(y)
	if err1 != nil || err2 != nil {
		t.Fatalf("json.Marshal = %v, %v", err1, err2)
	}
	return bytes.Equal(a, b)
}
