package vm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
)

// FuzzLinkKind (V1): over either transport, a stream whose first byte is a kind is accepted
// as that kind and carries the guest's bytes after it unchanged; any other first byte is
// ErrBadKind for that stream only, and the link accepts the next stream. The vsock transport
// is driven through its interface over unix sockets, never AF_VSOCK.
func FuzzLinkKind(f *testing.F) {
	for _, k := range []Kind{KindControl, KindStdin, KindStdout, KindStderr, KindEndpoint, 'x', 0} {
		f.Add(byte(k), []byte("GET / HTTP/1.0\r\n\r\n"), false)
		f.Add(byte(k), []byte{}, true)
	}
	f.Fuzz(func(t *testing.T, kind byte, payload []byte, vsockLink bool) {
		var g GuestLink
		var h HostLink
		if vsockLink {
			var ln *pairListener
			g, ln = vsockPair(t, 7)
			h = NewVsockHost(ln, 7)
		} else {
			a, b := unixPair(t)
			var err error
			if g, err = NewSerialGuest(a); err != nil {
				t.Fatal(err)
			}
			if h, err = NewSerialHost(b); err != nil {
				t.Fatal(err)
			}
		}
		defer g.Close()
		defer h.Close()
		c, err := g.Open(Kind(kind))
		if err != nil {
			t.Fatalf("Open(%#x) = %v", kind, err)
		}
		defer c.Close()
		go func() {
			c.Write(payload)
			c.(interface{ CloseWrite() error }).CloseWrite()
		}()
		k, hc, err := h.Accept()
		if !Kind(kind).valid() {
			if !errors.Is(err, ErrBadKind) {
				t.Fatalf("Accept(kind %#x) = %c, %v, want ErrBadKind", kind, k, err)
			}
			next, err := g.Open(KindControl)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if k, hc, err := h.Accept(); err != nil || k != KindControl {
				t.Fatalf("Accept after a bad kind = %c, %v, want the control stream", k, err)
			} else {
				hc.Close()
			}
			return
		}
		if err != nil || k != Kind(kind) {
			t.Fatalf("Accept(kind %c) = %c, %v", kind, k, err)
		}
		defer hc.Close()
		got, err := io.ReadAll(hc)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("stream of kind %c carried %q, %v, want %q", kind, got, err, payload)
		}
	})
}

// FuzzControlRecv (V1, V2): the host reads the guest's control lines (and the guest the
// host's) exactly as encoding/json reads each line: a line is a message iff json.Unmarshal
// accepts it, a line over maxControlLine is refused before it is decoded, and every message
// read is sent again unchanged (send∘recv is a fixpoint).
func FuzzControlRecv(f *testing.F) {
	cfg, _ := json.Marshal(GuestConfig{Argv: []string{"/bin/sh"}, UID: 1000, GID: 1000, Hostname: "run",
		Shares: []GuestShare{{Tag: "home", Mount: "/home/agent"}}, Tasks: 256, Memory: 1 << 30, FileSize: 1 << 30, TmpBytes: 1 << 26})
	f.Add(append(cfg, '\n'), false)
	f.Add([]byte(`{"kernel_ms":12,"modules_ms":3,"link_ms":1}`+"\n"+`{"event":"started","setup_ms":4}`+"\r\n"+`{"event":"exit","exit_code":1}`), false)
	f.Add([]byte(`{"event":"exit","limit":"run_memory"}`+"\n\n"+`[1]`+"\n"), false)
	f.Add([]byte(`{"kernel_ms":1}`+"\n"), true)
	f.Add([]byte(`{"event":"started","setup_ms":4}`+"\n"), true) // over the limit
	f.Fuzz(func(t *testing.T, data []byte, long bool) {
		if long {
			// The first line is padded to 16 bytes short of the limit, so the fuzzer's bytes
			// decide which side of it the line ends (a 256 KiB input would be minimised for
			// the whole campaign).
			data = append(bytes.Repeat([]byte(" "), maxControlLine-16), data...)
		}
		ctl := newControl(&memConn{r: bytes.NewReader(data)})
		ref := bufio.NewReaderSize(bytes.NewReader(data), len(data)+16)
		for i := 0; ; i++ {
			line, _, refErr := ref.ReadLine()
			// Lines are read as each kind of message in turn: what the host reads (Hello,
			// Event) and what the guest reads (GuestConfig, HostOp).
			got, want := newControlMsg(i), newControlMsg(i)
			err := ctl.recv(got)
			switch {
			case refErr != nil:
				if err == nil {
					t.Fatalf("recv of line %d past the end = %+v, want an error", i, got)
				}
				return
			case len(line) > maxControlLine:
				if err == nil {
					t.Fatalf("recv of a %d-byte line = nil error, want refused over %d", len(line), maxControlLine)
				}
				return // the stream is abandoned after an oversized line
			}
			wantErr := json.Unmarshal(line, want)
			if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("recv(line %d %q) = %+v, %v, want %+v, %v", i, line, got, err, want, wantErr)
			}
			if err != nil {
				return
			}
			resendControl(t, got)
		}
	})
}

func newControlMsg(i int) any {
	switch i % 4 {
	case 0:
		return new(Hello)
	case 1:
		return new(Event)
	case 2:
		return new(GuestConfig)
	}
	return new(HostOp)
}

// resendControl sends ev over a fresh control stream and wants it back unchanged.
func resendControl(t *testing.T, ev any) {
	t.Helper()
	var wire bytes.Buffer
	if err := newControl(&memConn{w: &wire}).send(ev); err != nil {
		t.Fatalf("send(%+v) = %v", ev, err)
	}
	back := reflect.New(reflect.TypeOf(ev).Elem()).Interface()
	if err := newControl(&memConn{r: bytes.NewReader(wire.Bytes())}).recv(back); err != nil || !reflect.DeepEqual(back, ev) {
		t.Fatalf("recv(send(%+v)) = %+v, %v", ev, back, err)
	}
}

// memConn is a net.Conn over memory: control streams without goroutines, so one input always
// runs the same code (the fuzzer's coverage stays deterministic).
type memConn struct {
	net.Conn // nil: only the methods below are called
	r        io.Reader
	w        io.Writer
}

func (c *memConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error) { return c.w.Write(p) }
