package integration

// The set-up and the attackers of the intake tests (N1): node B under attack, node A in
// B's trust list, node C in B's peers table, and attackers in this process that speak to B
// as pkg/peer's package doc describes, each from loopback addresses of its own (the whole
// 127.0.0.0/8 is this machine's, so no namespace is needed to play many hosts).

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
)

// Bounds of every attack: it must be in force within warmUpBound, and it ends attackBound
// after that. A peer's task that has not arrived by then was not accepted while the attack
// ran, and the test fails. (A sender whose first attempts are turned away retries after 1,
// 2, 4, 8 and 16 s: attackBound is passed after about five refusals in a row.)
const (
	warmUpBound = 90 * time.Second
	attackBound = 30 * time.Second
)

// attackFDs is how many descriptors the attacks hold at once in this process, with room for
// the rest of the test.
const attackFDs = 2000 + 1024

// needFDs raises this process's descriptor limit to what the attacks hold (the soft limit,
// up to the hard one); it never touches the product's limits.
func needFDs(tb testing.TB, n uint64) {
	tb.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatal(err)
	}
	if uint64(rl.Cur) >= n {
		return
	}
	if uint64(rl.Max) < n {
		tb.Fatalf("the intake attacks hold %d descriptors; RLIMIT_NOFILE allows %d: run `ulimit -n %d` (as root, `ulimit -Hn %d` first) before make test",
			n, rl.Max, n, n)
	}
	setLimit(&rl.Cur, n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		tb.Fatal(err)
	}
}

// setLimit stores n in a rlimit field, whose integer type differs between systems.
func setLimit[T int64 | uint64](field *T, n uint64) { *field = T(n) }

// newStranger is a fresh key in no table of any node.
func newStranger(tb testing.TB) *identity.Identity {
	tb.Helper()
	k, err := identity.Generate()
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// intakeRig is B (the node under attack, auto-reply off so tasks wait in its inbox), A
// (trusted by B) and C (known to B).
type intakeRig struct {
	tb         testing.TB
	a, b, c    *testNode
	sa, sb, sc control.Status
}

func newIntakeRig(tb testing.TB, extraConfig string) *intakeRig {
	tb.Helper()
	needFDs(tb, attackFDs)
	r := &intakeRig{tb: tb}
	r.b = newNode(tb, nodeOptions{config: fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n  trusted: off\n  untrusted: off\n%s", freePort(tb), extraConfig)})
	r.a, r.c = newNode(tb, nodeOptions{}), newNode(tb, nodeOptions{})
	for _, n := range []*testNode{r.a, r.b, r.c} {
		n.start()
	}
	r.sa, r.sb, r.sc = r.a.status(), r.b.status(), r.c.status()
	r.a.mustAnet("peer", "add", r.sb.AID, r.sb.ListenAddr)
	r.c.mustAnet("peer", "add", r.sb.AID, r.sb.ListenAddr)
	r.b.mustAnet("peer", "add", r.sa.AID, r.sa.ListenAddr)
	r.b.mustAnet("trust", "add", r.sa.AID)
	r.b.mustAnet("peer", "add", r.sc.AID, r.sc.ListenAddr)
	return r
}

// latency is how long one `anet send` took to reach B's inbox: B's receive time minus the
// sender's queue time (one machine, one clock).
func (r *intakeRig) deliver(from *testNode, text string, stop <-chan struct{}) (time.Duration, error) {
	id := strings.TrimSpace(from.mustAnet("send", "--to", r.sb.AID, text))
	var queued time.Time
	if l := from.show(id); len(l) == 1 {
		queued = l[0].CreatedAt
	}
	var took time.Duration
	for took == 0 {
		out, _, err := r.b.anet("show", "--json", id)
		if err == nil {
			var it control.Interaction // anet show --json prints one object
			if json.Unmarshal([]byte(out), &it) == nil && it.Interaction == id {
				took = max(it.CreatedAt.Sub(queued), time.Nanosecond)
				break
			}
		}
		select {
		case <-stop:
			return 0, fmt.Errorf("task %s not in B's inbox when the attack ended (%s after it was in force)", id, attackBound)
		case <-time.After(25 * time.Millisecond):
		}
	}
	// Room kept for the operator's peers means their first attempt gets through: a sender
	// that was turned away and retried (1 s later, then 2 s, …) was not given that room.
	var d control.Delivery
	for d.State != "delivered" {
		if l := from.show(id); len(l) == 1 && len(l[0].Delivery) == 1 {
			d = l[0].Delivery[0]
		}
		time.Sleep(25 * time.Millisecond)
	}
	if d.Attempts != 1 {
		return took, fmt.Errorf("task %s reached B after %d attempts (last error: %s): the peer was turned away", id, d.Attempts, d.LastError)
	}
	return took, nil
}

// attackStats are what the attackers saw.
type attackStats struct {
	dials, ended, handshakes, sent, identities atomic.Int64
	mu                                         sync.Mutex
	codes                                      map[string]int
}

func (s *attackStats) code(c string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[string]int{}
	}
	s.codes[c]++
}

func (s *attackStats) count(c string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codes[c]
}

// refused is how many connections B ended and messages it refused, as the attackers saw.
func (s *attackStats) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int(s.ended.Load())
	for c, k := range s.codes {
		if c != string(peer.StatusAccepted) && c != string(peer.StatusDuplicate) {
			n += k
		}
	}
	return n
}

func (s *attackStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("dials %d, ended by B %d, handshakes %d, identities %d, tasks sent %d, refusals %v",
		s.dials.Load(), s.ended.Load(), s.handshakes.Load(), s.identities.Load(), s.sent.Load(), s.codes)
}

// attack is one way of attacking B; run returns when ctx ends; inForce says when the attack
// is at full strength, so the peers' tasks are sent into it, not before it.
type attack struct {
	name    string
	run     func(ctx context.Context, r *intakeRig, st *attackStats)
	inForce func(st *attackStats) bool
}

// underAttack runs att against B and, once it is in force, sends a task from A (trusted)
// and one from C (known); the attack goes on until both are in B's inbox. It fails if that
// takes until the attack's bounded end.
func (r *intakeRig) underAttack(att attack) (trusted, known time.Duration, st *attackStats) {
	r.tb.Helper()
	st = &attackStats{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		att.run(ctx, r, st)
	}()
	warm := time.After(warmUpBound)
	for !att.inForce(st) {
		select {
		case <-warm:
			cancel()
			<-done
			r.tb.Fatalf("%s: never in force within %s: %s", att.name, warmUpBound, st)
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.tb.Logf("%s in force: %s", att.name, st)
	end := time.AfterFunc(attackBound, cancel)
	var wg sync.WaitGroup
	var errA, errC error
	wg.Add(2)
	go func() { defer wg.Done(); trusted, errA = r.deliver(r.a, "trusted, during "+att.name, ctx.Done()) }()
	go func() { defer wg.Done(); known, errC = r.deliver(r.c, "known, during "+att.name, ctx.Done()) }()
	wg.Wait()
	stillRunning := end.Stop()
	cancel()
	<-done
	if errA != nil || errC != nil {
		r.tb.Fatalf("%s: trusted: %v; known: %v; attack: %s", att.name, errA, errC, st)
	}
	if !stillRunning {
		r.tb.Fatalf("%s: the tasks arrived only as the attack reached its bound", att.name)
	}
	r.tb.Logf("%s: trusted %s, known %s; attack: %s", att.name, trusted.Round(time.Millisecond), known.Round(time.Millisecond), st)
	return trusted, known, st
}

// loopbackIP is the i-th attacker address in 127.block.0.0/16.
func loopbackIP(block, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(block), byte(i / 250), byte(i%250 + 1)})
}

// pacer hands out at most perSecond tokens a second to all the workers of one attack.
func pacer(ctx context.Context, perSecond int) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second / time.Duration(perSecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch
}

// holdUntilClosed blocks until B ends c or the attack ends.
func holdUntilClosed(ctx context.Context, c net.Conn, st *attackStats) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	c.Read(make([]byte, 1))
	if stop() {
		st.ended.Add(1) // B ended it, not the attack
	}
	c.Close()
}

// paced runs n workers until ctx ends; worker i dials from src(i), and each call of once
// costs a token of at most perSecond a second shared by all the workers.
func paced(ctx context.Context, n, perSecond int, src func(i int) netip.Addr, once func(d *net.Dialer)) {
	pace := pacer(ctx, perSecond)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src(i).AsSlice()}}
			for {
				select {
				case <-ctx.Done():
					return
				case <-pace:
				}
				once(d)
			}
		}()
	}
	wg.Wait()
}

// halfOpen keeps n silent TCP connections open to B from the addresses src gives, opening
// a new one whenever B ends one (at most perSecond a second in all). Nothing is ever sent:
// no TLS work, no key.
func halfOpen(n int, src func(i int) netip.Addr, perSecond int) func(context.Context, *intakeRig, *attackStats) {
	return func(ctx context.Context, r *intakeRig, st *attackStats) {
		paced(ctx, n, perSecond, src, func(d *net.Dialer) {
			st.dials.Add(1)
			c, err := d.DialContext(ctx, "tcp", r.sb.ListenAddr)
			if err != nil {
				st.ended.Add(1) // reset during connect
				return
			}
			holdUntilClosed(ctx, c, st)
		})
	}
}

// docCertificate is a peer certificate made as pkg/peer's package doc describes it: one
// self-signed Ed25519 certificate; names and dates do not matter.
func docCertificate(key ed25519.PrivateKey) (tls.Certificate, error) {
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// docVerify checks a node's certificate as the package doc tells an implementer to: the
// certificate is not a CA, so its signature is checked with the key it carries, and the
// aid derived from that key must be the one dialled.
func docVerify(want string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) != 1 {
			return errors.New("want exactly one certificate")
		}
		c := cs.PeerCertificates[0]
		pub, ok := c.PublicKey.(ed25519.PublicKey)
		if !ok {
			return errors.New("not an Ed25519 key")
		}
		if !ed25519.Verify(pub, c.RawTBSCertificate, c.Signature) {
			return errors.New("certificate not signed by its own key")
		}
		if got := identity.AIDFromPublicKey(pub); got != want {
			return fmt.Errorf("aid %s, want %s", got, want)
		}
		if cs.NegotiatedProtocol != peer.ALPN {
			return errors.New("no anet/1")
		}
		return nil
	}
}

// idleTLS keeps n TLS connections open to B, each with a key made for it alone, from
// addresses src gives; each sits idle after the handshake until B ends it, then a new key
// dials again (at most perSecond a second in all).
func idleTLS(n int, src func(i int) netip.Addr, perSecond int) func(context.Context, *intakeRig, *attackStats) {
	return func(ctx context.Context, r *intakeRig, st *attackStats) {
		paced(ctx, n, perSecond, src, func(d *net.Dialer) {
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			cert, err := docCertificate(key)
			if err != nil {
				return
			}
			st.identities.Add(1)
			st.dials.Add(1)
			raw, err := d.DialContext(ctx, "tcp", r.sb.ListenAddr)
			if err != nil {
				st.ended.Add(1)
				return
			}
			tc := tls.Client(raw, &tls.Config{
				MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
				NextProtos: []string{peer.ALPN}, ServerName: "anet",
				// Go's chain check cannot apply to a key-addressed peer; docVerify is the check.
				InsecureSkipVerify: true, VerifyConnection: docVerify(r.sb.AID),
			})
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err = tc.HandshakeContext(hctx)
			cancel()
			if err != nil {
				st.ended.Add(1)
				raw.Close()
				return
			}
			st.handshakes.Add(1)
			holdUntilClosed(ctx, tc, st)
		})
	}
}

// taskFlood sends tasks from n fresh keys, workers at a time from addrs addresses, at most
// perSecond tasks a second in all; each key sends perKey tasks (whatever B answers), then
// the worker moves to a new key and a new connection.
func taskFlood(n, workers, addrs, perKey, perSecond int, text string) func(context.Context, *intakeRig, *attackStats) {
	return func(ctx context.Context, r *intakeRig, st *attackStats) {
		pace := pacer(ctx, perSecond)
		keys := make(chan int, n)
		for i := 0; i < n; i++ {
			keys <- i
		}
		var made sync.Map // int → *identity.Identity: a key is the same each time round
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					var k int
					select {
					case k = <-keys:
					default:
						k = -1 // every key used: keep going with the one in hand
					}
					floodKey(ctx, r, st, &made, pace, loopbackIP(3, w%addrs), perKey, k, text)
					if k >= 0 {
						keys <- k // used keys go round again
					}
				}
			}()
		}
		wg.Wait()
	}
}

// floodKey sends perKey tasks as key k of this attack (made on first use) from ip.
func floodKey(ctx context.Context, r *intakeRig, st *attackStats, made *sync.Map, pace <-chan struct{}, ip netip.Addr, perKey, k int, text string) {
	var id *identity.Identity
	if v, ok := made.Load(k); ok {
		id = v.(*identity.Identity)
	} else {
		g, err := identity.Generate()
		if err != nil {
			return
		}
		v, loaded := made.LoadOrStore(k, g)
		id = v.(*identity.Identity)
		if !loaded {
			st.identities.Add(1)
		}
	}
	cl, err := peer.NewClient(id)
	if err != nil {
		return
	}
	st.dials.Add(1)
	conn, err := cl.From(ip).Dial(ctx, r.sb.ListenAddr, r.sb.AID)
	if err != nil {
		st.ended.Add(1)
		// Turned away at once: try again a little later rather than spin (each worker
		// still re-dials ten times a second).
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	st.handshakes.Add(1)
	for i := 0; i < perKey; i++ {
		select {
		case <-ctx.Done():
			return
		case <-pace:
		}
		ix := fmt.Sprintf("ix-%d-%d", time.Now().UnixNano(), i)
		sm, err := peer.Sign(id, peer.Message{Type: peer.TypeTask, ID: "m-" + ix, From: id.AID(), To: r.sb.AID, Sent: time.Now(), Interaction: ix, Text: text})
		if err != nil {
			return
		}
		ack, err := conn.Send(sm)
		st.sent.Add(1)
		if err != nil {
			st.ended.Add(1)
			return
		}
		if ack.Status == peer.StatusRefused {
			code := string(ack.Code)
			if ack.Code == peer.CodeRateLimited && strings.Contains(ack.Detail, "node-wide") {
				code += "(node-wide)"
			}
			st.code(code)
		} else {
			st.code(string(ack.Status))
		}
	}
}

// intakeAttacks are the attacks of the intake tests and benchmarks, in the order they run
// against one B.
func intakeAttacks() []attack {
	return []attack{
		{
			name: "2000 half-open TCP from one address",
			run:  halfOpen(2000, func(int) netip.Addr { return netip.MustParseAddr("127.0.0.66") }, 2000),
			inForce: func(st *attackStats) bool {
				return st.dials.Load() >= 2000 && st.ended.Load() >= 1000
			},
		},
		{
			name: "2000 half-open TCP from 2000 addresses",
			run:  halfOpen(2000, func(i int) netip.Addr { return loopbackIP(1, i) }, 2000),
			inForce: func(st *attackStats) bool {
				return st.dials.Load() >= 2000 && st.ended.Load() >= 500
			},
		},
		{
			name: "2000 idle TLS with fresh keys from 250 addresses",
			run:  idleTLS(2000, func(i int) netip.Addr { return loopbackIP(2, i%250) }, 500),
			inForce: func(st *attackStats) bool {
				return st.identities.Load() >= 2000 && st.handshakes.Load() >= 200 && st.ended.Load() >= 200
			},
		},
		{
			name: "2000 fresh keys flooding tasks from 100 addresses",
			run:  taskFlood(2000, 100, 100, 3, 600, "do this for me"),
			inForce: func(st *attackStats) bool {
				return st.identities.Load() >= 2000 && st.count(string(peer.CodeRateLimited)+"(node-wide)") > 0
			},
		},
		{
			name: "strangers filling their quotas with 256 KiB tasks",
			run:  taskFlood(40, 40, 20, 1000, 40, strings.Repeat("q", peer.MaxText)),
			// In force once strangers together are at their quota (a stranger meets its own
			// quota first; TestIntakeUnderAttack checks that B refused both).
			inForce: func(st *attackStats) bool { return st.count(string(peer.CodeStrangersQuota)) > 0 },
		},
	}
}

// intakeAttackConfig: one stranger may keep one 256 KiB task unanswered and strangers
// together 8 MiB, so the quota attack reaches both within seconds.
const intakeAttackConfig = "intake:\n  stranger_pending_max: 512KiB\n  strangers_pending_max: 8MiB\n"
