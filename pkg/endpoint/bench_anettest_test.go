//go:build anettest

package endpoint

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/dialer"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/logging"
	"anet.dev/anet/pkg/modelproxy"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// The per-request cost of a run's endpoint in the set-up `make bench-compare` measures
// (internal/benchcompare/model.go): the fake api.anthropic.com over TLS, the agent on the
// run's unix socket, the helper's JSON log into a pipe, a new run every benchRunRequests
// requests (R1 caps a run's requests). Its "httputil" twin is the anchor served the same way:
// ns/op and allocs/op of the two, side by side, are what the endpoint adds; profile one with
// -cpuprofile / -memprofile to see where. Not a test: timings are read, never asserted.

const (
	benchKey         = "sk-ant-bench-0123456789abcdef"
	benchModel       = "claude-haiku-5-5"
	benchRunRequests = 50
	benchEvents      = 20
)

type benchSetup struct {
	ca  *localca.Authority
	up  *standin.Upstream
	dir string
	k   keys.Keys
}

func newBenchSetup(b *testing.B) *benchSetup {
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		b.Fatal(err)
	}
	up := standin.NewUpstream(ca, benchKey, "bench-placeholder-that-is-never-sent-anywhere", benchModel)
	b.Cleanup(up.Close)
	dialer.AnetTestRedirect("api.anthropic.com:443", up.Addr())
	b.Cleanup(func() { dialer.AnetTestRedirect("api.anthropic.com:443", "") })
	dir, err := os.MkdirTemp("/tmp", "anet-epb-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	kf := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(kf, []byte("anthropic: "+benchKey+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	k, err := keys.Load(kf)
	if err != nil {
		b.Fatal(err)
	}
	return &benchSetup{ca: ca, up: up, dir: dir, k: k}
}

// benchRuns hands out the current run's client and header, opening a new run (untimed) every
// benchRunRequests requests.
type benchRuns struct {
	s     *benchSetup
	n     int
	e     *Endpoint
	c     *http.Client
	close func()
}

func (r *benchRuns) next(b *testing.B) (*http.Client, http.Header) {
	if r.e == nil || r.n%benchRunRequests == 0 {
		b.StopTimer()
		// As runs overlap, and as the bench does: the next run opens before the last closes,
		// so the upstream connection they share stays warm.
		old := r.close
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		go io.Copy(io.Discard, pr)
		log, flush := logging.NewJSONAsync(pw, 0)
		e, err := Open(filepath.Join(r.s.dir, fmt.Sprintf("run-%d", r.n)), Policy{RunID: fmt.Sprintf("bench-%d", r.n), Agent: "claude"},
			r.s.k, nil, Options{RootCAs: r.s.ca.Pool, Logger: log})
		if err != nil {
			b.Fatal(err)
		}
		r.e, r.c = e, benchClient(e.SocketPath())
		r.close = func() { e.Close(); flush(); pw.Close() }
		if old != nil {
			old()
		}
		benchSend(b, r.c, r.header(), `{"model":"haiku","max_tokens":1,"messages":[{"role":"user","content":"warm"}]}`)
		b.StartTimer()
	}
	r.n++
	return r.c, r.header()
}

func (r *benchRuns) header() http.Header {
	return http.Header{"Authorization": {"Bearer " + r.e.Placeholder()}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
}

func (r *benchRuns) stop() {
	if r.close != nil {
		r.close()
		r.close = nil
	}
}

// benchPlain serves the anchor: a plain httputil.ReverseProxy that only injects the key.
func benchPlain(b *testing.B, s *benchSetup) *http.Client {
	sock := filepath.Join(s.dir, "plain.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	target := &url.URL{Scheme: "https", Host: "api.anthropic.com"}
	srv := &http.Server{Handler: &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Set("X-Api-Key", benchKey)
		},
		Transport: modelproxy.NewTransport(s.ca.Pool),
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return benchClient(sock)
}

var (
	benchAgentBody  = `{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`
	benchPinnedBody = `{"model":"` + benchModel + `","max_tokens":8192,"messages":[{"role":"user","content":"hi"}]}`
	benchPlainHdr   = http.Header{"Anthropic-Version": {"2023-06-01"}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}
)

func BenchmarkEndpointJSON(b *testing.B) {
	s := newBenchSetup(b)
	b.Run("endpoint", func(b *testing.B) {
		r := &benchRuns{s: s}
		defer r.stop()
		b.ReportAllocs()
		for range b.N {
			c, h := r.next(b)
			benchSend(b, c, h, benchAgentBody)
		}
	})
	b.Run("httputil", func(b *testing.B) {
		c := benchPlain(b, s)
		for range 20 {
			benchSend(b, c, benchPlainHdr, benchPinnedBody)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			benchSend(b, c, benchPlainHdr, benchPinnedBody)
		}
	})
}

// BenchmarkEndpointSSE is one stream of benchEvents events per op, sent as fast as the
// upstream writes them (no pauses: the CPU per stream is what it measures).
func BenchmarkEndpointSSE(b *testing.B) {
	s := newBenchSetup(b)
	s.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n", benchModel)
		f.Flush()
		for i := range benchEvents {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"e%dx\"}}\n\n", i)
			f.Flush()
		}
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		f.Flush()
	})
	stream := func(body string) string {
		return strings.Replace(body, `"max_tokens"`, `"stream":true,"max_tokens"`, 1)
	}
	b.Run("endpoint", func(b *testing.B) {
		r := &benchRuns{s: s}
		defer r.stop()
		b.ReportAllocs()
		for range b.N {
			c, h := r.next(b)
			benchStream(b, c, h, stream(benchAgentBody))
		}
	})
	b.Run("httputil", func(b *testing.B) {
		c := benchPlain(b, s)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			benchStream(b, c, benchPlainHdr, stream(benchPinnedBody))
		}
	})
}

func benchClient(sock string) *http.Client {
	c := unixClient(sock)
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = 4
	return c
}

// benchPost sends a Messages request and returns its 200 answer, open.
func benchPost(b *testing.B, c *http.Client, h http.Header, body string) *http.Response {
	req, err := http.NewRequest("POST", "http://endpoint/v1/messages", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != 200 {
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.Fatalf("POST = %d %s", resp.StatusCode, out)
	}
	return resp
}

func benchSend(b *testing.B, c *http.Client, h http.Header, body string) {
	resp := benchPost(b, c, h, body)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func benchStream(b *testing.B, c *http.Client, h http.Header, body string) {
	resp := benchPost(b, c, h, body)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"text_delta"`) {
			n++
		}
	}
	if n != benchEvents {
		b.Fatalf("stream had %d of %d events", n, benchEvents)
	}
}
