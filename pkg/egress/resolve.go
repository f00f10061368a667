package egress

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// errNoSuchHost is returned when a name server says the name does not exist.
var errNoSuchHost = errors.New("no such host")

// dnsResolver is a small DNS stub resolver. Go's resolvers (both the pure-Go one and cgo's
// getaddrinfo) consult /etc/hosts first and may append search domains, and the Go resolver
// reads /etc/hosts even for a name with a trailing dot. For a tunnel the answer must come from
// DNS for exactly the requested name, so this resolver asks the configured name servers for
// the FQDN and nothing else. It never goes through a proxy (H7).
type dnsResolver struct {
	servers []string // ip:port
	timeout time.Duration
}

// resolvConf is the file systemResolver reads its name servers from.
const resolvConf = "/etc/resolv.conf"

// fileResolver is the dnsResolver of the name servers a resolv.conf names, read again for every
// lookup (only its `nameserver` lines: search, domain and ndots are ignored on purpose). Read
// late, not when the proxy is built: a host with no usable nameserver line (an offline host,
// a resolv.conf being rewritten by a network manager) refuses a run's CONNECT with
// egress_resolve_failed, while the run itself, its model traffic and the endpoint's self-test
// (loopback only) work; and a resolver the operator changes applies to the next CONNECT.
type fileResolver struct {
	path    string
	timeout time.Duration
}

// systemResolver is the fileResolver of /etc/resolv.conf. Two tries of each question (parallel
// A and AAAA) take at most 6 s of the 15 s that resolving and connecting may take together.
func systemResolver() *fileResolver {
	return &fileResolver{path: resolvConf, timeout: 3 * time.Second}
}

// LookupNetIP asks the name servers the file names now (see dnsResolver.LookupNetIP).
func (r *fileResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	servers, err := readNameservers(r.path)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", host, err)
	}
	return (&dnsResolver{servers: servers, timeout: r.timeout}).LookupNetIP(ctx, network, host)
}

func readNameservers(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read name servers: %w", err)
	}
	defer f.Close()
	servers, err := parseNameservers(f)
	if err != nil {
		return nil, fmt.Errorf("read name servers %s: %w", path, err)
	}
	return servers, nil
}

func parseNameservers(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, 53).String())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("no nameserver line")
	}
	return out, nil
}

// LookupNetIP returns the A and/or AAAA records of host (network "ip", "ip4" or "ip6"). For
// "ip" both questions go out at once; the answer holds what came back, so a name server
// that drops AAAA questions costs its timeout, not the name (H5 checks every address that
// is returned, and only those are ever dialled).
func (r *dnsResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	fqdn := host
	if !strings.HasSuffix(fqdn, ".") {
		fqdn += "."
	}
	name, err := dnsmessage.NewName(fqdn)
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", host, err)
	}
	var types []dnsmessage.Type
	switch network {
	case "ip":
		types = []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA}
	case "ip4":
		types = []dnsmessage.Type{dnsmessage.TypeA}
	case "ip6":
		types = []dnsmessage.Type{dnsmessage.TypeAAAA}
	default:
		return nil, fmt.Errorf("lookup %s: unknown network %q", host, network)
	}
	type answer struct {
		addrs []netip.Addr
		err   error
	}
	answers := make([]answer, len(types))
	var wg sync.WaitGroup
	for i, t := range types {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].addrs, answers[i].err = r.queryRetry(ctx, name, t)
		}()
	}
	wg.Wait()
	var addrs []netip.Addr
	var errs []error
	nx := 0
	for i, a := range answers {
		addrs = append(addrs, a.addrs...)
		switch {
		case errors.Is(a.err, errNoSuchHost):
			nx++
		case a.err != nil:
			errs = append(errs, fmt.Errorf("%v: %w", types[i], a.err))
		}
	}
	if len(addrs) > 0 {
		return addrs, nil
	}
	if len(errs) > 0 && nx < len(types) {
		return nil, fmt.Errorf("lookup %s: %w", host, errors.Join(errs...))
	}
	return nil, fmt.Errorf("lookup %s: %w", host, errNoSuchHost)
}

// queryRetry asks one question, and once more if no server answered the first time (a lost
// datagram is the common failure of UDP DNS).
func (r *dnsResolver) queryRetry(ctx context.Context, name dnsmessage.Name, t dnsmessage.Type) ([]netip.Addr, error) {
	addrs, err := r.query(ctx, name, t)
	if err == nil || errors.Is(err, errNoSuchHost) || ctx.Err() != nil {
		return addrs, err
	}
	return r.query(ctx, name, t)
}

// query asks each server in turn until one gives an answer (success or NXDOMAIN).
func (r *dnsResolver) query(ctx context.Context, name dnsmessage.Name, t dnsmessage.Type) ([]netip.Addr, error) {
	var last error = errors.New("no name server")
	for _, s := range r.servers {
		qctx, cancel := context.WithTimeout(ctx, r.timeout)
		msg, err := exchange(qctx, s, name, t)
		cancel()
		if err != nil {
			last = err
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		switch msg.RCode {
		case dnsmessage.RCodeSuccess:
			return answerAddrs(msg, name, t), nil
		case dnsmessage.RCodeNameError:
			return nil, errNoSuchHost
		default:
			last = fmt.Errorf("name server %s answered %v", s, msg.RCode)
		}
	}
	return nil, last
}

// answerAddrs follows the CNAME chain from name and keeps only records on it, so an extra
// record for another name in a poisoned answer is not used.
func answerAddrs(msg *dnsmessage.Message, name dnsmessage.Name, t dnsmessage.Type) []netip.Addr {
	onChain := map[string]bool{strings.ToLower(name.String()): true}
	for changed := true; changed; {
		changed = false
		for _, rr := range msg.Answers {
			c, ok := rr.Body.(*dnsmessage.CNAMEResource)
			if !ok || !onChain[strings.ToLower(rr.Header.Name.String())] {
				continue
			}
			if target := strings.ToLower(c.CNAME.String()); !onChain[target] {
				onChain[target] = true
				changed = true
			}
		}
	}
	var out []netip.Addr
	for _, rr := range msg.Answers {
		if !onChain[strings.ToLower(rr.Header.Name.String())] {
			continue
		}
		switch b := rr.Body.(type) {
		case *dnsmessage.AResource:
			if t == dnsmessage.TypeA {
				out = append(out, netip.AddrFrom4(b.A))
			}
		case *dnsmessage.AAAAResource:
			if t == dnsmessage.TypeAAAA {
				out = append(out, netip.AddrFrom16(b.AAAA))
			}
		}
	}
	return out
}

// exchange sends one query over UDP and retries over TCP when the answer is truncated.
func exchange(ctx context.Context, server string, name dnsmessage.Name, t dnsmessage.Type) (*dnsmessage.Message, error) {
	var idb [2]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, err
	}
	id := binary.BigEndian.Uint16(idb[:])
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: name, Type: t, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return nil, err
	}
	msg, err := exchangeOn(ctx, "udp", server, packed, q)
	if err == nil && !msg.Truncated {
		return msg, nil
	}
	if err != nil && !errors.Is(err, errTruncated) {
		return nil, err
	}
	return exchangeOn(ctx, "tcp", server, packed, q)
}

var errTruncated = errors.New("truncated")

func exchangeOn(ctx context.Context, network, server string, packed []byte, q dnsmessage.Message) (*dnsmessage.Message, error) {
	var d net.Dialer // a plain dialer: no proxy (H7)
	c, err := d.DialContext(ctx, network, server)
	if err != nil {
		return nil, fmt.Errorf("dns %s %s: %w", network, server, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if network == "tcp" {
		buf := make([]byte, 2+len(packed))
		binary.BigEndian.PutUint16(buf, uint16(len(packed)))
		copy(buf[2:], packed)
		if _, err := c.Write(buf); err != nil {
			return nil, fmt.Errorf("dns tcp %s: %w", server, err)
		}
		var lb [2]byte
		if _, err := io.ReadFull(c, lb[:]); err != nil {
			return nil, fmt.Errorf("dns tcp %s: %w", server, err)
		}
		resp := make([]byte, binary.BigEndian.Uint16(lb[:]))
		if _, err := io.ReadFull(c, resp); err != nil {
			return nil, fmt.Errorf("dns tcp %s: %w", server, err)
		}
		m, ok := matchResponse(resp, q)
		if !ok {
			return nil, fmt.Errorf("dns tcp %s: answer does not match the question", server)
		}
		return m, nil
	}
	if _, err := c.Write(packed); err != nil {
		return nil, fmt.Errorf("dns udp %s: %w", server, err)
	}
	buf := make([]byte, 1232)
	for {
		// Skip datagrams that do not answer our question (late or spoofed answers).
		n, err := c.Read(buf)
		if err != nil {
			return nil, fmt.Errorf("dns udp %s: %w", server, err)
		}
		m, ok := matchResponse(buf[:n], q)
		if !ok {
			continue
		}
		if m.Truncated {
			return m, errTruncated
		}
		return m, nil
	}
}

func matchResponse(b []byte, q dnsmessage.Message) (*dnsmessage.Message, bool) {
	var m dnsmessage.Message
	if err := m.Unpack(b); err != nil {
		return nil, false
	}
	if !m.Response || m.ID != q.ID || len(m.Questions) != 1 {
		return nil, false
	}
	got, want := m.Questions[0], q.Questions[0]
	if got.Type != want.Type || got.Class != want.Class || !strings.EqualFold(got.Name.String(), want.Name.String()) {
		return nil, false
	}
	return &m, true
}
