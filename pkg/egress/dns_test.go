package egress

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"anet.dev/anet/internal/testkit"
)

// fakeDNS is a real DNS server on loopback (UDP and TCP on one port) that answers from a
// table and records every question it is asked.
type fakeDNS struct {
	addr string

	mu       sync.Mutex
	records  map[string][]dnsmessage.Resource // by lower-case FQDN
	rcode    dnsmessage.RCode
	truncUDP bool // answer UDP with TC set and no records
	spoof    bool // send a reply with a wrong ID before the real one
	spoofQ   bool // send a reply with the right ID for another name (answering loopback) first
	dropAAAA bool // never answer an AAAA question (a server or middlebox that drops them)
	// dropFirst is how many questions of a type go unanswered before the server answers.
	dropFirst map[dnsmessage.Type]int
	// holdA keeps A answers back until an AAAA question has arrived: only a resolver that
	// asks both at once gets an A answer.
	holdA   bool
	sawAAAA chan struct{}
	asked   []string
}

func startFakeDNS(t *testing.T) *fakeDNS {
	t.Helper()
	d := &fakeDNS{records: map[string][]dnsmessage.Resource{}, dropFirst: map[dnsmessage.Type]int{}, sawAAAA: make(chan struct{})}
	var pc net.PacketConn
	var ln net.Listener
	for try := 0; ; try++ {
		var err error
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("fake dns: listen udp: %v", err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
		if try > 20 {
			t.Fatalf("fake dns: no port free for both udp and tcp: %v", err)
		}
	}
	d.addr = pc.LocalAddr().String()
	t.Cleanup(func() { pc.Close(); ln.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			// One goroutine per question, so that a held answer does not stop the next
			// question from being read.
			q := append([]byte(nil), buf[:n]...)
			go func() {
				for _, out := range d.answer(q, true) {
					pc.WriteTo(out, from)
				}
			}()
		}
	}()
	testkit.Serve(ln, func(c net.Conn) {
		var lb [2]byte
		if _, err := io.ReadFull(c, lb[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(lb[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		for _, out := range d.answer(q, false) {
			binary.BigEndian.PutUint16(lb[:], uint16(len(out)))
			c.Write(append(lb[:], out...))
		}
	})
	return d
}

func (d *fakeDNS) add(name string, body dnsmessage.ResourceBody) {
	d.addUnder(strings.ToLower(name), name, body)
}

// addUnder stores a record for name under key ("*": sent in every answer).
func (d *fakeDNS) addUnder(key, name string, body dnsmessage.ResourceBody) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := dnsmessage.MustNewName(name)
	var typ dnsmessage.Type
	switch body.(type) {
	case *dnsmessage.AResource:
		typ = dnsmessage.TypeA
	case *dnsmessage.AAAAResource:
		typ = dnsmessage.TypeAAAA
	case *dnsmessage.CNAMEResource:
		typ = dnsmessage.TypeCNAME
	}
	d.records[key] = append(d.records[key], dnsmessage.Resource{
		Header: dnsmessage.ResourceHeader{Name: n, Type: typ, Class: dnsmessage.ClassINET, TTL: 60},
		Body:   body,
	})
}

func (d *fakeDNS) addIP(name, ip string) {
	a := netip.MustParseAddr(ip)
	if a.Is4() {
		d.add(name, &dnsmessage.AResource{A: a.As4()})
	} else {
		d.add(name, &dnsmessage.AAAAResource{AAAA: a.As16()})
	}
}

// set changes the server's behaviour under its lock.
func (d *fakeDNS) set(f func(d *fakeDNS)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

func (d *fakeDNS) questions() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}

// answer returns the packets to send for one query: answers of the asked type for the name
// and along its CNAME chain, plus every record stored under the key "*".
func (d *fakeDNS) answer(b []byte, udp bool) [][]byte {
	var q dnsmessage.Message
	if err := q.Unpack(b); err != nil || len(q.Questions) != 1 {
		return nil
	}
	qq := q.Questions[0]
	d.mu.Lock()
	d.asked = append(d.asked, qq.Name.String()+" "+strings.TrimPrefix(qq.Type.String(), "Type"))
	if qq.Type == dnsmessage.TypeAAAA {
		select {
		case <-d.sawAAAA:
		default:
			close(d.sawAAAA)
		}
	}
	drop := (d.dropAAAA && qq.Type == dnsmessage.TypeAAAA) || d.dropFirst[qq.Type] > 0
	if d.dropFirst[qq.Type] > 0 {
		d.dropFirst[qq.Type]--
	}
	hold := d.holdA && qq.Type == dnsmessage.TypeA
	d.mu.Unlock()
	if drop {
		return nil
	}
	if hold {
		select {
		case <-d.sawAAAA:
		case <-time.After(30 * time.Second):
			return nil
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: q.ID, Response: true, RecursionAvailable: true, RCode: d.rcode},
		Questions: q.Questions,
	}
	if udp && d.truncUDP {
		resp.Truncated = true
	} else if d.rcode == dnsmessage.RCodeSuccess {
		name := strings.ToLower(qq.Name.String())
		for hops := 0; hops < 8; hops++ {
			next := ""
			for _, rr := range d.records[name] {
				if c, ok := rr.Body.(*dnsmessage.CNAMEResource); ok {
					resp.Answers = append(resp.Answers, rr)
					next = strings.ToLower(c.CNAME.String())
				} else if rr.Header.Type == qq.Type {
					resp.Answers = append(resp.Answers, rr)
				}
			}
			if next == "" {
				break
			}
			name = next
		}
		for _, rr := range d.records["*"] {
			if rr.Header.Type == qq.Type {
				resp.Answers = append(resp.Answers, rr)
			}
		}
	}
	out, err := resp.Pack()
	if err != nil {
		return nil
	}
	var first []byte
	switch {
	case d.spoof:
		bad := resp
		bad.ID++
		bad.Answers = nil
		bad.RCode = dnsmessage.RCodeNameError
		first, _ = bad.Pack()
	case d.spoofQ:
		other := dnsmessage.MustNewName("evil.example.com.")
		bad := resp
		bad.Questions = []dnsmessage.Question{{Name: other, Type: qq.Type, Class: qq.Class}}
		bad.Answers = []dnsmessage.Resource{{
			Header: dnsmessage.ResourceHeader{Name: other, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
			Body:   &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}},
		}}
		first, _ = bad.Pack()
	default:
		return [][]byte{out}
	}
	return [][]byte{first, out}
}
