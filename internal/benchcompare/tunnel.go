//go:build anettest && linux

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/localca"
)

// tunnelHost's public address is what the tunnel resolves and checks; the dialer's test hook
// then sends it to the loopback bulk server.
const (
	tunnelHost = "pypi.org"
	tunnelIP   = "151.101.0.223"
	bulkMiB    = 256
)

type staticResolver map[string][]netip.Addr

func (s staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return s[host], nil
}

// runTunnel measures CONNECT bulk throughput upstream → agent: raw bytes after a real
// ClientHello, and a full TLS session, through a run's endpoint (its unix socket, as the
// sandbox's relay reaches it), next to a direct connection, smokescreen and tinyproxy.
func runTunnel(cfg config, rep *report) error {
	rounds := cfg.rounds
	if rounds == 0 {
		rounds = 5
	}
	rounds = min(rounds, 9)
	tmp, err := os.MkdirTemp("/tmp", "anet-bench-tunnel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ca, err := localca.New(tunnelHost)
	if err != nil {
		return err
	}
	hello := captureHello(&tls.Config{ServerName: tunnelHost, RootCAs: ca.Pool})
	rawSrv, err := bulkServer(nil, len(hello))
	if err != nil {
		return err
	}
	defer rawSrv.Close()
	tlsSrv, err := bulkServer(&tls.Config{Certificates: []tls.Certificate{ca.Cert}}, 0)
	if err != nil {
		return err
	}
	defer tlsSrv.Close()

	// Ours: a run's endpoint with its CONNECT handler; limits lifted so that the bulk fits.
	kf := filepath.Join(tmp, "keys.yaml")
	os.WriteFile(kf, []byte("anthropic: "+benchKey+"\n"), 0o600)
	k, err := keys.Load(kf)
	if err != nil {
		return err
	}
	tp, err := egress.NewProxy(egress.Policy{Allow: []string{tunnelHost}, Limits: egress.Limits{
		OpenTunnels: 1 << 20, TotalTunnels: 1 << 30, SentBytes: 1 << 60, ReceivedBytes: 1 << 60,
	}}, egress.Options{Resolver: staticResolver{tunnelHost: {netip.MustParseAddr(tunnelIP)}}})
	if err != nil {
		return err
	}
	ep, err := endpoint.Open(filepath.Join(tmp, "run"), endpoint.Policy{RunID: "bench-tunnel", Agent: "claude", Allow: []string{tunnelHost}}, k, tp, endpoint.Options{})
	if err != nil {
		return err
	}
	defer ep.Close()

	smk, smkMissing := startSmokescreen(cfg, tmp)
	if smk != nil {
		defer smk.stop()
	}
	tiny, tinyMissing := startTinyproxy(cfg, tmp)
	if tiny != nil {
		defer tiny.stop()
	}

	type path struct {
		name    string
		missing string
		dial    func(target string) (net.Conn, error)
	}
	paths := []path{
		{name: "direct", dial: func(target string) (net.Conn, error) { return net.Dial("tcp", target) }},
		{name: "ours", dial: func(target string) (net.Conn, error) {
			dialer.AnetTestRedirect(tunnelIP+":443", target)
			return connectVia("unix", ep.SocketPath(), tunnelHost+":443")
		}},
		{name: "smokescreen", missing: smkMissing, dial: func(target string) (net.Conn, error) {
			return connectVia("tcp", smk.addr, target)
		}},
		{name: "tinyproxy", missing: tinyMissing, dial: func(target string) (net.Conn, error) {
			return connectVia("tcp", tiny.addr, target)
		}},
	}
	defer dialer.AnetTestRedirect(tunnelIP+":443", "")
	for _, mode := range []string{"raw", "tls"} {
		got := map[string][]float64{}
		for range rounds {
			for i := range paths {
				p := &paths[i]
				if p.missing != "" || (mode == "tls" && p.name == "tinyproxy") {
					continue
				}
				var mibs float64
				var err error
				if mode == "raw" {
					mibs, err = rawDownload(p.dial, rawSrv.Addr().String(), hello)
				} else {
					mibs, err = tlsDownload(p.dial, tlsSrv.Addr().String(), ca)
				}
				if err != nil {
					if p.name == "direct" || p.name == "ours" {
						return fmt.Errorf("%s %s: %w", mode, p.name, err)
					}
					p.missing = err.Error()
					continue
				}
				got[p.name] = append(got[p.name], mibs)
			}
		}
		ours := median(got["ours"])
		var as []anchor
		for _, p := range paths[:] {
			if p.name == "ours" || (mode == "tls" && p.name == "tinyproxy") {
				continue
			}
			as = append(as, anchor{Name: p.name, Value: median(got[p.name]), Missing: p.missing})
		}
		if mode == "raw" {
			ratio := ours / value(as, "smokescreen")
			rep.add(metric{What: "CONNECT bulk, raw bytes after a real ClientHello", Unit: "MiB/s", Ours: ours, Anchors: as,
				RatioTo: "smokescreen", Ratio: ratio, Aim: "≥ 2× smokescreen", Met: smkMissing == "" && ratio >= 2})
		} else {
			ratio := ours / value(as, "direct")
			rep.add(metric{What: "CONNECT bulk, full TLS", Unit: "MiB/s", Ours: ours, Anchors: as,
				RatioTo: "direct", Ratio: ratio, Aim: "≥ 0.9 direct", Met: ratio >= 0.9})
		}
	}
	return nil
}

// bulkServer accepts connections (TLS when cfg is set), skips skip bytes (the replayed
// hello), reads an 8-byte count of MiB and writes that many.
func bulkServer(cfg *tls.Config, skip int) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	chunk := make([]byte, 1<<20)
	testkit.Serve(ln, func(c net.Conn) {
		defer c.Close()
		if _, err := io.CopyN(io.Discard, c, int64(skip)); err != nil {
			return
		}
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		for range binary.BigEndian.Uint64(hdr[:]) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	return ln, nil
}

func rawDownload(dial func(string) (net.Conn, error), target string, hello []byte) (float64, error) {
	c, err := dial(target)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], bulkMiB)
	start := time.Now()
	if _, err := c.Write(append(append([]byte(nil), hello...), hdr[:]...)); err != nil {
		return 0, err
	}
	return readAll(c, start)
}

func tlsDownload(dial func(string) (net.Conn, error), target string, ca *localca.Authority) (float64, error) {
	c, err := dial(target)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	tc := tls.Client(c, &tls.Config{ServerName: tunnelHost, RootCAs: ca.Pool})
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], bulkMiB)
	if _, err := tc.Write(hdr[:]); err != nil {
		return 0, err
	}
	return readAll(tc, start)
}

func readAll(r io.Reader, start time.Time) (float64, error) {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return 0, err
	}
	if n != bulkMiB<<20 {
		return 0, fmt.Errorf("got %d bytes, want %d", n, bulkMiB<<20)
	}
	return float64(bulkMiB) / time.Since(start).Seconds(), nil
}

// connectVia opens a CONNECT tunnel to target through the proxy at addr.
func connectVia(network, addr, target string) (net.Conn, error) {
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || br.Buffered() != 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s via %s = %s", target, addr, resp.Status)
	}
	return c, nil
}

// captureHello returns the ClientHello a Go client sends with cfg.
func captureHello(cfg *tls.Config) []byte {
	a, b := net.Pipe()
	go tls.Client(a, cfg).Handshake()
	buf := make([]byte, 64<<10)
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hello []byte
	for {
		n, err := b.Read(buf)
		hello = append(hello, buf[:n]...)
		if err != nil || len(hello) >= 5 && len(hello) >= 5+int(binary.BigEndian.Uint16(hello[3:5])) {
			break
		}
	}
	a.Close()
	b.Close()
	return hello
}

type proc struct {
	cmd  *exec.Cmd
	addr string
}

func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

func startProc(name string, args []string, port int) (*proc, string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, "start: " + err.Error()
	}
	p := &proc{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err := waitPort(p.addr, 30*time.Second); err != nil {
		p.stop()
		return nil, "did not listen: " + err.Error()
	}
	return p, ""
}

// startSmokescreen runs the pinned smokescreen, allowing loopback (the bulk server) and
// clients without a certificate.
func startSmokescreen(cfg config, tmp string) (*proc, string) {
	bin := filepath.Join(cfg.anchors, "bin", "smokescreen")
	if _, err := os.Stat(bin); err != nil {
		return nil, "not installed in " + cfg.anchors
	}
	port, err := freePort()
	if err != nil {
		return nil, err.Error()
	}
	conf := filepath.Join(tmp, "smokescreen.yaml")
	os.WriteFile(conf, []byte("allow_missing_role: true\nallow_ranges: [\"127.0.0.0/8\"]\n"), 0o600)
	return startProc(bin, []string{"--config-file", conf, "--listen-ip", "127.0.0.1", "--listen-port", strconv.Itoa(port)}, port)
}

// startTinyproxy runs Debian's tinyproxy in the foreground on a loopback port.
func startTinyproxy(_ config, tmp string) (*proc, string) {
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		bin = "/usr/bin/tinyproxy"
		if _, err := os.Stat(bin); err != nil {
			return nil, "not installed (apt-get install tinyproxy)"
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err.Error()
	}
	conf := filepath.Join(tmp, "tinyproxy.conf")
	user := ""
	if os.Geteuid() == 0 {
		user = "User nobody\nGroup nogroup\n"
	}
	os.WriteFile(conf, []byte(fmt.Sprintf("%sPort %d\nListen 127.0.0.1\nTimeout 600\nMaxClients 100\nLogLevel Critical\nDisableViaHeader Yes\n", user, port)), 0o644)
	return startProc(bin, []string{"-d", "-c", conf}, port)
}
