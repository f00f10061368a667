//go:build anettest

package modelproxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/secret"
)

// BenchmarkModelRequestLatency measures the latency the model proxy adds per request (make
// bench), in one run against two baselines: calling the fake upstream directly, and a
// plain httputil.ReverseProxy that only injects the key. The three paths are interleaved per
// iteration so that machine load affects them alike. Reported: p50/p99 of each path in µs,
// the added p50/p99 over each baseline, and the p50 ratios.
func BenchmarkModelRequestLatency(b *testing.B) {
	h := newHarness(b, "claude", "", Limits{})
	// New refuses limits above R1; the benchmark lifts them after construction.
	h.proxy.limits = Limits{Requests: 1 << 40, BodyBytes: 8 << 20, TotalBytes: 1 << 50}
	body := `{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`
	upstream := &url.URL{Scheme: "https", Host: "api.anthropic.com"}

	tr := NewTransport(h.upRoots)
	direct := &http.Client{Transport: tr}
	plain := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Set("X-Api-Key", h.key)
		},
		Transport: NewTransport(h.upRoots),
		// The default flushing, as the node's proxy has it: an event stream (or an answer of
		// unknown length) is flushed on every write, a JSON answer when it is complete.
		FlushInterval: 0,
	})
	defer plain.Close()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}

	send := func(c *http.Client, url string, hdr http.Header, directBody string) time.Duration {
		req, _ := http.NewRequest("POST", url, strings.NewReader(directBody))
		for k, v := range hdr {
			req.Header[k] = v
		}
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("POST %s = %d", url, resp.StatusCode)
		}
		return d
	}
	// The direct call and the plain proxy send what the fake accepts (pinned model, capped).
	pinnedBody := `{"model":"claude-haiku-5-5","max_tokens":8192,"messages":[{"role":"user","content":"hi"}]}`
	directHdr := http.Header{"X-Api-Key": {h.key}, "Anthropic-Version": {"2023-06-01"}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}
	proxHdr := http.Header{"Authorization": {"Bearer " + h.ph}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	plainHdr := http.Header{"Anthropic-Version": {"2023-06-01"}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}

	var dDirect, dPlain, dAnet []time.Duration
	for i := 0; i < 20; i++ { // warm connections
		send(direct, "https://api.anthropic.com/v1/messages", directHdr, pinnedBody)
		send(client, plain.URL+"/v1/messages", plainHdr, pinnedBody)
		send(client, h.front.URL+"/v1/messages", proxHdr, body)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dDirect = append(dDirect, send(direct, "https://api.anthropic.com/v1/messages", directHdr, pinnedBody))
		dPlain = append(dPlain, send(client, plain.URL+"/v1/messages", plainHdr, pinnedBody))
		dAnet = append(dAnet, send(client, h.front.URL+"/v1/messages", proxHdr, body))
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3
	}
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"direct", dDirect}, {"plain", dPlain}, {"anet", dAnet}} {
		b.ReportMetric(pct(m.ds, 0.50), m.name+"-p50-µs")
		b.ReportMetric(pct(m.ds, 0.99), m.name+"-p99-µs")
	}
	b.ReportMetric(pct(dAnet, 0.50)-pct(dDirect, 0.50), "added-vs-direct-p50-µs")
	b.ReportMetric(pct(dAnet, 0.99)-pct(dDirect, 0.99), "added-vs-direct-p99-µs")
	b.ReportMetric(pct(dAnet, 0.50)-pct(dPlain, 0.50), "added-vs-plain-p50-µs")
	b.ReportMetric(pct(dAnet, 0.99)-pct(dPlain, 0.99), "added-vs-plain-p99-µs")
	b.ReportMetric(pct(dAnet, 0.50)/pct(dDirect, 0.50), "ratio-vs-direct-p50")
	b.ReportMetric(pct(dAnet, 0.50)/pct(dPlain, 0.50), "ratio-vs-plain-p50")
}

// BenchmarkStreamEventDelay measures how long an SSE event takes from the upstream's write to
// the agent's read, through the proxy and, as baselines in the same run, reading the fake
// upstream directly and through the same proxy with metering off (the body not read for
// usage, as before K1). Reported: p50/p99 per-event delay of each in µs, what metering adds
// at p50 and p99, and the p50 ratios.
func BenchmarkStreamEventDelay(b *testing.B) {
	h := newHarness(b, "claude", "", Limits{})
	h.proxy.limits = Limits{Requests: 1 << 40, BodyBytes: 8 << 20, TotalBytes: 1 << 50}
	up, _ := upstream.For("claude", "")
	bare, err := New(h.proxy.eng, up, Options{Placeholder: h.ph, Key: secret.New(h.key), RootCAs: h.upRoots})
	if err != nil {
		b.Fatal(err)
	}
	bare.limits, bare.log, bare.unmetered = h.proxy.limits, h.proxy.log, true
	bareFront := httptest.NewServer(bare)
	defer bareFront.Close()
	const events = 20
	sent := make(chan time.Time, events)
	h.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		// A stream as api.anthropic.com sends it: usage in the first and last events, text
		// deltas between; every event is timed.
		for i := 0; i < events; i++ {
			sent <- time.Now()
			switch i {
			case 0:
				fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1200,\"cache_read_input_tokens\":40000,\"output_tokens\":1}}}\n\n")
			case events - 1:
				fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":380}}\n\n")
			default:
				fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word %d of a streamed answer, about as long as a real delta\"}}\n\n", i)
			}
			f.Flush()
			time.Sleep(200 * time.Microsecond) // keep events apart so each is its own read
		}
	})
	direct := &http.Client{Transport: NewTransport(h.upRoots)}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	pinned := `{"model":"claude-haiku-5-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	stream := func(c *http.Client, url string, hdr http.Header, body string) []time.Duration {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		var ds []time.Duration
		for len(ds) < events {
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatalf("stream ended after %d events: %v", len(ds), err)
			}
			if strings.HasPrefix(line, "data:") {
				ds = append(ds, time.Since(<-sent))
			}
		}
		io.Copy(io.Discard, resp.Body)
		return ds
	}
	directHdr := http.Header{"X-Api-Key": {h.key}, "Accept-Encoding": {"identity"}, "Content-Type": {"application/json"}}
	proxHdr := http.Header{"Authorization": {"Bearer " + h.ph}, "Content-Type": {"application/json"}}
	var dDirect, dAnet, dBare []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dDirect = append(dDirect, stream(direct, "https://api.anthropic.com/v1/messages", directHdr, pinned)...)
		// The two proxies alternate which goes first, so that order does not favour one.
		if i%2 == 0 {
			dBare = append(dBare, stream(client, bareFront.URL+"/v1/messages", proxHdr, pinned)...)
			dAnet = append(dAnet, stream(client, h.front.URL+"/v1/messages", proxHdr, pinned)...)
		} else {
			dAnet = append(dAnet, stream(client, h.front.URL+"/v1/messages", proxHdr, pinned)...)
			dBare = append(dBare, stream(client, bareFront.URL+"/v1/messages", proxHdr, pinned)...)
		}
	}
	b.StopTimer()
	if s := h.proxy.Usage().Spend; s.Responses == 0 || s.UsageMissing != 0 {
		b.Fatalf("metered proxy spend %+v: the benchmark must meter every stream", s)
	}
	pct := func(ds []time.Duration, p float64) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(dDirect, 0.5), "direct-event-p50-µs")
	b.ReportMetric(pct(dDirect, 0.99), "direct-event-p99-µs")
	b.ReportMetric(pct(dAnet, 0.5), "anet-event-p50-µs")
	b.ReportMetric(pct(dAnet, 0.99), "anet-event-p99-µs")
	b.ReportMetric(pct(dBare, 0.5), "unmetered-event-p50-µs")
	b.ReportMetric(pct(dBare, 0.99), "unmetered-event-p99-µs")
	b.ReportMetric(pct(dAnet, 0.5)-pct(dBare, 0.5), "metering-added-p50-µs")
	b.ReportMetric(pct(dAnet, 0.99)-pct(dBare, 0.99), "metering-added-p99-µs")
	b.ReportMetric(pct(dAnet, 0.5)/pct(dDirect, 0.5), "ratio-event-p50")
	b.ReportMetric(pct(dAnet, 0.5)/pct(dBare, 0.5), "ratio-metered-vs-unmetered-p50")
}
