//go:build anettest && linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/logging"
	"anet.dev/anet/pkg/modelproxy"
	"anet.dev/anet/pkg/modelproxy/standin"
)

const (
	benchKey    = "sk-ant-bench-0123456789abcdef"
	pinnedModel = "claude-haiku-5-5"
	// requestsPerRun stays under R1's 60 model requests: the bench opens a new run's
	// endpoint (before closing the old one, as runs overlap) every so many requests.
	requestsPerRun = 50
	sseEvents      = 20
)

// runModel measures the latency the model proxy adds to a request (JSON) and to each event of
// a stream (SSE), over a direct call to the fake upstream, next to a plain
// httputil.ReverseProxy that only injects the key and the Portkey gateway. Ours is the whole
// endpoint of a run on its unix socket, logging as the helper does (JSON lines into a pipe);
// httputil is served the same way.
func runModel(cfg config, rep *report) error {
	rounds := cfg.rounds
	if rounds == 0 {
		rounds = 600
	}
	tmp, err := os.MkdirTemp("/tmp", "anet-bench-model-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		return err
	}
	up := standin.NewUpstream(ca, benchKey, "bench-placeholder-that-is-never-sent-anywhere", pinnedModel)
	defer up.Close()
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	defer dialer.AnetTestRedirect("api.anthropic.com:443", "")

	ours, err := newRunRotator(tmp, ca)
	if err != nil {
		return err
	}
	defer ours.close()

	plainSock := filepath.Join(tmp, "plain.sock")
	ln, err := net.Listen("unix", plainSock)
	if err != nil {
		return err
	}
	target := &url.URL{Scheme: "https", Host: "api.anthropic.com"}
	plainSrv := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Set("X-Api-Key", benchKey)
		},
		Transport: modelproxy.NewTransport(ca.Pool),
		// The default flushing, as the node's proxy has it: an event stream (or an answer of
		// unknown length) is flushed on every write, a JSON answer when it is complete.
		FlushInterval: 0,
	}}
	go plainSrv.Serve(ln)
	defer plainSrv.Close()
	plain := unixClient(plainSock)
	direct := &http.Client{Transport: modelproxy.NewTransport(ca.Pool)}

	pk, pkMissing := startPortkey(cfg, tmp, ca.PEM)
	if pk != nil {
		defer pk.stop()
	}
	upURL := "https://" + up.Addr()

	agentBody := `{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`
	pinnedBody := `{"model":"` + pinnedModel + `","max_tokens":8192,"messages":[{"role":"user","content":"hi"}]}`
	directHdr := http.Header{"X-Api-Key": {benchKey}, "Anthropic-Version": {"2023-06-01"}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}
	plainHdr := http.Header{"Anthropic-Version": {"2023-06-01"}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}
	pkHdr := http.Header{"X-Api-Key": {benchKey}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"},
		"X-Portkey-Provider": {"anthropic"}, "X-Portkey-Custom-Host": {upURL + "/v1"},
		// Portkey adds an old beta of its own when none is given, which the fake refuses.
		"Anthropic-Beta": {"prompt-caching-2024-07-31"}}

	// JSON: the four paths interleaved, so that machine load touches them alike.
	var dDirect, dPlain, dOurs, dPK []time.Duration
	for i := -20; i < rounds; i++ { // 20 rounds warm every connection first
		d1, err := send(direct, "https://api.anthropic.com/v1/messages", directHdr, pinnedBody)
		if err != nil {
			return fmt.Errorf("direct: %w", err)
		}
		d2, err := send(plain, "http://plain/v1/messages", plainHdr, pinnedBody)
		if err != nil {
			return fmt.Errorf("httputil: %w", err)
		}
		c, hdr := ours.next()
		d3, err := send(c, "http://endpoint/v1/messages", hdr, agentBody)
		if err != nil {
			return fmt.Errorf("ours: %w", err)
		}
		var d4 time.Duration
		if pkMissing == "" {
			if d4, err = send(pk.client, pk.url+"/v1/messages", pkHdr, pinnedBody); err != nil {
				pkMissing = "requests failed: " + err.Error()
			}
		}
		if i < 0 {
			continue
		}
		dDirect, dPlain, dOurs = append(dDirect, d1), append(dPlain, d2), append(dOurs, d3)
		if pkMissing == "" {
			dPK = append(dPK, d4)
		}
	}
	// What a path adds is its time minus the direct call's in the same round: machine load
	// that hits one round hits both.
	added := func(ds []time.Duration) []time.Duration {
		out := make([]time.Duration, len(ds))
		for i := range ds {
			out[i] = ds[i] - dDirect[i]
		}
		return out
	}
	for _, p := range []float64{0.50, 0.99} {
		ours, plainAdded := pct(added(dOurs), p), pct(added(dPlain), p)
		name := fmt.Sprintf("model request added latency p%.0f (JSON)", p*100)
		ratio := ours / plainAdded
		rep.add(metric{What: name, Unit: "ms", Ours: ours, Anchors: []anchor{
			{Name: "httputil", Value: plainAdded},
			{Name: "Portkey", Value: pct(added(dPK), p), Missing: pkMissing},
		}, RatioTo: "httputil", Ratio: ratio, Aim: "≤ 1.2× httputil", Met: ratio > 0 && ratio <= 1.2})
	}

	// SSE: how long each event takes from the upstream's write to the agent's read.
	var sent [sseEvents]time.Time
	var sentMu sync.Mutex
	up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n", pinnedModel)
		f.Flush()
		for i := range sseEvents {
			sentMu.Lock()
			sent[i] = time.Now()
			sentMu.Unlock()
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"e%dx\"}}\n\n", i)
			f.Flush()
			time.Sleep(200 * time.Microsecond) // keep events apart so that each is its own read
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		f.Flush()
	})
	delay := func(i int) time.Duration {
		sentMu.Lock()
		defer sentMu.Unlock()
		return time.Since(sent[i])
	}
	streamBody := strings.Replace(pinnedBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)
	agentStream := strings.Replace(agentBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)
	var sDirect, sPlain, sOurs, sPK []time.Duration
	streams := max(rounds/20, 10)
	for range streams {
		ds, err := stream(direct, "https://api.anthropic.com/v1/messages", directHdr, streamBody, delay)
		if err != nil {
			return fmt.Errorf("direct stream: %w", err)
		}
		sDirect = append(sDirect, ds...)
		if ds, err = stream(plain, "http://plain/v1/messages", plainHdr, streamBody, delay); err != nil {
			return fmt.Errorf("httputil stream: %w", err)
		}
		sPlain = append(sPlain, ds...)
		c, hdr := ours.next()
		if ds, err = stream(c, "http://endpoint/v1/messages", hdr, agentStream, delay); err != nil {
			return fmt.Errorf("ours stream: %w", err)
		}
		sOurs = append(sOurs, ds...)
		if pkMissing == "" {
			if ds, err = stream(pk.client, pk.url+"/v1/messages", pkHdr, streamBody, delay); err != nil {
				pkMissing = "streams failed: " + err.Error()
			}
			sPK = append(sPK, ds...)
		}
	}
	base := pct(sDirect, 0.5)
	oursAdded, plainAdded := pct(sOurs, 0.5)-base, pct(sPlain, 0.5)-base
	ratio := oursAdded / plainAdded
	rep.add(metric{What: "SSE per-event added p50", Unit: "ms", Ours: oursAdded, Anchors: []anchor{
		{Name: "httputil", Value: plainAdded},
		{Name: "Portkey", Value: pct(sPK, 0.5) - base, Missing: pkMissing},
	}, RatioTo: "httputil", Ratio: ratio, Aim: "≤ 1.2× httputil", Met: ratio > 0 && ratio <= 1.2})
	return nil
}

// runRotator hands out the endpoint of the current run and opens the next run's (before
// closing the old one) every requestsPerRun requests.
type runRotator struct {
	dir  string
	ca   *localca.Authority
	k    keys.Keys
	logW io.Closer
	n    int
	cur  *endpoint.Endpoint
	c    *http.Client
}

func newRunRotator(dir string, ca *localca.Authority) (*runRotator, error) {
	kf := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(kf, []byte("anthropic: "+benchKey+"\n"), 0o600); err != nil {
		return nil, err
	}
	k, err := keys.Load(kf)
	if err != nil {
		return nil, err
	}
	return &runRotator{dir: dir, ca: ca, k: k}, nil
}

func (r *runRotator) next() (*http.Client, http.Header) {
	if r.cur == nil || r.n%requestsPerRun == 0 {
		old, oldLog := r.cur, r.logW
		// Logged as the helper logs: JSON lines into a pipe that another reader drains.
		pr, pw, err := os.Pipe()
		if err != nil {
			panic(err)
		}
		go io.Copy(io.Discard, pr)
		log, flush := logging.NewJSONAsync(pw, 0)
		e, err := endpoint.Open(filepath.Join(r.dir, fmt.Sprintf("run-%d", r.n)), endpoint.Policy{RunID: fmt.Sprintf("bench-%d", r.n), Agent: "claude"},
			r.k, nil, endpoint.Options{RootCAs: r.ca.Pool, Logger: log})
		if err != nil {
			panic(fmt.Sprintf("open endpoint: %v", err))
		}
		r.cur, r.logW, r.c = e, closers{flusher(flush), pw}, unixClient(e.SocketPath())
		if old != nil {
			old.Close()
			oldLog.Close()
		}
		// Untimed: the agent's first connection to a new run is not what is compared (the
		// baselines' clients are warm too).
		if _, err := send(r.c, "http://endpoint/v1/messages", r.header(), `{"model":"haiku","max_tokens":1,"messages":[{"role":"user","content":"warm"}]}`); err != nil {
			panic(fmt.Sprintf("warm the new run: %v", err))
		}
	}
	r.n++
	return r.c, r.header()
}

type flusher func()

func (f flusher) Close() error { f(); return nil }

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

func (r *runRotator) header() http.Header {
	return http.Header{"Authorization": {"Bearer " + r.cur.Placeholder()}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
}

func (r *runRotator) close() {
	if r.cur != nil {
		r.cur.Close()
		r.logW.Close()
	}
}

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

func send(c *http.Client, u string, hdr http.Header, body string) (time.Duration, error) {
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)

	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("POST %s = %d %s", u, resp.StatusCode, b)
	}
	return d, nil
}

var deltaRE = regexp.MustCompile(`"text":"e(\d+)x"`)

// stream reads one SSE answer and returns each content event's delay (write to read).
func stream(c *http.Client, u string, hdr http.Header, body string, delay func(int) time.Duration) ([]time.Duration, error) {
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("POST %s = %d %s", u, resp.StatusCode, b)
	}
	r := bufio.NewReader(resp.Body)
	var ds []time.Duration
	for {
		line, err := r.ReadString('\n')
		if m := deltaRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "data:") {
			i, _ := strconv.Atoi(m[1])
			ds = append(ds, delay(i))
		}
		if err != nil {
			break
		}
	}
	if len(ds) != sseEvents {
		return nil, fmt.Errorf("stream of %s had %d of %d events", u, len(ds), sseEvents)
	}
	return ds, nil
}

type portkey struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
}

func (p *portkey) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// startPortkey runs the pinned Portkey gateway on a free loopback port, trusting the fake
// upstream's CA; it returns why not when it cannot.
func startPortkey(cfg config, tmp string, caPEM []byte) (*portkey, string) {
	script := filepath.Join(cfg.anchors, "portkey", "node_modules", "@portkey-ai", "gateway", "build", "start-server.js")
	if _, err := os.Stat(script); err != nil {
		return nil, "not installed in " + cfg.anchors
	}
	caFile := filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		return nil, err.Error()
	}
	port, err := freePort()
	if err != nil {
		return nil, err.Error()
	}
	cmd := exec.Command("node", script, "--port="+strconv.Itoa(port), "--headless")
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
	if err := cmd.Start(); err != nil {
		return nil, "start: " + err.Error()
	}
	p := &portkey{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), client: &http.Client{Transport: &http.Transport{Proxy: nil}}}
	if err := waitPort(fmt.Sprintf("127.0.0.1:%d", port), 120*time.Second); err != nil {
		p.stop()
		return nil, "did not listen: " + err.Error()
	}
	return p, ""
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
