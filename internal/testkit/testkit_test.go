package testkit

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/pkg/identity"
)

// fakeT records a failure instead of ending the test, so the failing path can be checked.
type fakeT struct{ failed string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitHelpers(t *testing.T) {
	var n atomic.Int32
	if !Until(time.Minute, func() bool { return n.Add(1) >= 3 }) || n.Load() != 3 {
		t.Fatalf("Until: looked %d times, want true after the third look", n.Load())
	}
	if Until(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until(never) = true, want false once the deadline passes")
	}
	var f fakeT
	WaitFor(&f, "ready", func() bool { return true })
	if f.failed != "" {
		t.Fatalf("WaitFor(true) failed: %s", f.failed)
	}
	if WaitWithin(&f, "gone", 30*time.Millisecond, func() bool { return false }); f.failed != "gone: not reached within 30ms" {
		t.Fatalf("WaitWithin(never) failure = %q, want it to name what and how long", f.failed)
	}
}

// Serve hands every connection to the handler and closes it afterwards.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	Serve(ln, func(c net.Conn) { c.Write([]byte("hi")) })
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(Wait))
		b, err := io.ReadAll(c) // EOF only once Serve closed it
		c.Close()
		if err != nil || string(b) != "hi" {
			t.Fatalf("read %q, %v; want \"hi\" then EOF", b, err)
		}
	}
}

// SeedKey(1) is the key whose aid the store's and the peer's golden values use.
func TestSeedKey(t *testing.T) {
	const want = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"
	if got := identity.AIDFromPublicKey(SeedKey(1).Public().(ed25519.PublicKey)); got != want {
		t.Fatalf("aid of SeedKey(1) = %s, want %s", got, want)
	}
}
