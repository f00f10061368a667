//go:build anettest

package modelproxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

// scrubAll is what the agent must get for data as one piece: every key replaced, leftmost
// first.
func scrubAll(k *keyScrub, data []byte) []byte {
	var buf []byte
	out, _, _ := k.body(data, false, true, &buf)
	return append([]byte(nil), out...)
}

// writeInPieces writes data through the agent's side of the proxy, cut at random places.
func writeInPieces(t *testing.T, k *keyScrub, data []byte, rnd *rand.Rand) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	cw := &countingWriter{ResponseWriter: rec, total: new(atomic.Int64), scrub: k}
	for len(data) > 0 {
		n := 1 + rnd.IntN(len(data))
		if _, err := cw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	cw.end()
	if cw.n != int64(rec.Body.Len()) {
		t.Fatalf("counted %d bytes, the agent got %d", cw.n, rec.Body.Len())
	}
	return rec.Body.Bytes()
}

// E1: whatever the key (one byte, a key that contains the marker's letters or its usual edge,
// a key that ends in the marker's first letter) and however the answer is cut into writes, the
// agent's bytes never hold the key, have the upstream's length, and are what redacting the
// whole answer at once gives. The alphabet is the key's bytes and the marker's, so keys,
// overlapping keys, partial keys and markers abut in every way.
func TestKeyScrubAnyKeyAnyCutE1(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, key := range []string{"x", "xa", "aa", "*a*", "anet-redacted-key", "*anet-redacted-key", "sk-ant-a", "ab*#~!ab", "sk-operator-0123456789abcdef0123456789abcdef", "sk-ant-api03-" + strings.Repeat("Zq7_", 23) + "abc"} {
		k, err := newKeyScrub(key, "up.example", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if len(k.marker) != len(key) || bytes.Contains(k.marker, k.key) {
			t.Fatalf("key %q: marker %q", key, k.marker)
		}
		if len(key) >= len(markerText)+2 && !bytes.Contains(k.marker, []byte(markerText)) {
			t.Fatalf("key %q: marker %q does not say what happened", key, k.marker)
		}
		alphabet := []byte(key + string(k.marker) + "\n")
		for range 300 {
			var data []byte
			for range rnd.IntN(4 * len(key)) {
				switch rnd.IntN(4) {
				case 0:
					data = append(data, key...)
				case 1:
					data = append(data, key[:rnd.IntN(len(key))]...)
				default:
					data = append(data, alphabet[rnd.IntN(len(alphabet))])
				}
			}
			got := writeInPieces(t, k, data, rnd)
			if bytes.Contains(got, k.key) || len(got) != len(data) {
				t.Fatalf("key %q: %q became %q", key, data, got)
			}
			if want := scrubAll(k, data); !bytes.Equal(got, want) {
				t.Fatalf("key %q: %q cut in pieces became %q, at once %q", key, data, got, want)
			}
		}
	}
}

// E1: a key cut across three writes is held back until it is known, then redacted whole;
// the bytes before it leave with the write that carried them.
func TestKeyScrubAcrossThreeWritesE1(t *testing.T) {
	key := "sk-operator-" + strings.Repeat("k", 32)
	k, _ := newKeyScrub(key, "up.example", slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	cw := &countingWriter{ResponseWriter: rec, total: new(atomic.Int64), scrub: k}
	cw.Write([]byte("data: {\"echo\":\"" + key[:5]))
	if rec.Body.String() != "data: {\"echo\":\"" {
		t.Fatalf("after the first write the agent has %q", rec.Body.String())
	}
	cw.Write([]byte(key[5:20]))
	if rec.Body.String() != "data: {\"echo\":\"" {
		t.Fatalf("after the second write the agent has %q", rec.Body.String())
	}
	cw.Write([]byte(key[20:] + "\"}\n\n"))
	cw.end()
	if want := "data: {\"echo\":\"" + string(k.marker) + "\"}\n\n"; rec.Body.String() != want {
		t.Fatalf("the agent has %q, want %q", rec.Body.String(), want)
	}
}

// E1: the node's own error answers leave through the same writer: a refusal whose detail
// quoted the key would reach the agent redacted.
func TestKeyScrubOwnRefusalE1(t *testing.T) {
	key := "sk-operator-" + strings.Repeat("r", 32)
	k, _ := newKeyScrub(key, "up.example", slog.New(slog.DiscardHandler))
	rec := httptest.NewRecorder()
	cw := &countingWriter{ResponseWriter: rec, total: new(atomic.Int64), scrub: k}
	writeRefusal(cw, upstream.FamilyAnthropic, &rules.Refusal{Code: UpstreamFailed, Status: http.StatusBadGateway, Detail: "upstream said " + key})
	cw.end()
	if strings.Contains(rec.Body.String(), key) || !strings.Contains(rec.Body.String(), string(k.marker)) {
		t.Fatalf("refusal body %q", rec.Body.String())
	}
	if cl, _ := strconv.Atoi(rec.Header().Get("Content-Length")); cl != rec.Body.Len() {
		t.Fatalf("Content-Length %d, body %d bytes", cl, rec.Body.Len())
	}
}

// agentStream reads an answer as the agent, piece by piece, so that a test can see what has
// arrived while the upstream still holds the rest back.
type agentStream struct {
	resp *http.Response
	mu   sync.Mutex
	got  []byte
	done bool
}

func (s *agentStream) read() {
	b := make([]byte, 4096)
	for {
		n, err := s.resp.Body.Read(b)
		s.mu.Lock()
		s.got = append(s.got, b[:n]...)
		s.done = err != nil
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (s *agentStream) snapshot() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.got), s.done
}

// has waits until the agent has at least len(want) bytes (or the answer ended) and checks
// that they are want: no more (bytes held back must not leave early), no fewer (bytes that
// are not the key must not wait for the next write).
func (s *agentStream) has(t *testing.T, what, want string) {
	t.Helper()
	testkit.WaitFor(t, what, func() bool { got, done := s.snapshot(); return done || len(got) >= len(want) })
	if got, _ := s.snapshot(); got != want {
		t.Fatalf("%s: the agent has %q, want %q", what, got, want)
	}
}

// streamingUpstream makes the fake answer with an event stream whose pieces the test sends
// one by one (each flushed); closing the channel, or the test's end, ends the answer.
func streamingUpstream(t *testing.T, h *harness) chan<- string {
	pieces, stop := make(chan string), make(chan struct{})
	t.Cleanup(func() { close(stop) })
	h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case p, ok := <-pieces:
				if !ok {
					return
				}
				io.WriteString(w, p)
				w.(http.Flusher).Flush()
			case <-stop:
				return
			}
		}
	})
	return pieces
}

func send(t *testing.T, pieces chan<- string, p string) {
	t.Helper()
	select {
	case pieces <- p:
	case <-time.After(testkit.Wait):
		t.Fatalf("the upstream did not take the piece %q", p)
	}
}

func (h *harness) stream(t *testing.T) *agentStream {
	t.Helper()
	req, _ := http.NewRequest("POST", h.front.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Api-Key", h.ph)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	s := &agentStream{resp: resp}
	go s.read()
	return s
}

// E1: an event stream that echoes the key, cut so that the key straddles two flushes and then
// three, reaches the agent with the key redacted; the bytes before each key reach it at once.
func TestKeyScrubEventStreamE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	pieces := streamingUpstream(t, h)
	s := h.stream(t)
	k := h.proxy.scrub
	marker := string(k.marker)
	ev1 := "event: content_block_delta\ndata: {\"text\":\""
	send(t, pieces, ev1+h.key[:10])
	s.has(t, "the event before the key's first 10 bytes", ev1)
	send(t, pieces, h.key[10:]+"\"}\n\n")
	want := ev1 + marker + "\"}\n\n"
	s.has(t, "the event with the key redacted", want)

	send(t, pieces, ev1+h.key[:3])
	want += ev1
	s.has(t, "the second event before the key's first 3 bytes", want)
	send(t, pieces, h.key[3:9])
	send(t, pieces, h.key[9:]+"\"}\n\n")
	want += marker + "\"}\n\n"
	s.has(t, "the second event with the key redacted", want)
	close(pieces)
	testkit.WaitFor(t, "the stream to end", func() bool { _, done := s.snapshot(); return done })
	got, _ := s.snapshot()
	if got != want || strings.Contains(got, h.key) {
		t.Fatalf("the agent's stream is %q, want %q", got, want)
	}
	if s.resp.ContentLength != -1 || len(s.resp.TransferEncoding) != 1 || s.resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("stream length %d, transfer encoding %v, want chunked", s.resp.ContentLength, s.resp.TransferEncoding)
	}
	h.proxy.meter.AnetTestSettled()
	if u := h.proxy.Usage(); u.BytesToAgent != int64(len(got)) || u.Upstream.KeyEchoes != 1 {
		t.Fatalf("bytes to agent %d (the agent has %d), key echoes %d", u.BytesToAgent, len(got), u.Upstream.KeyEchoes)
	}
}

// E1: a piece of a stream that ends with the key's first bytes, when the key does not follow,
// is held back only until the next piece arrives: the agent has it before the stream ends.
func TestKeyScrubPartialKeyDeliveredE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	pieces := streamingUpstream(t, h)
	s := h.stream(t)
	ev := "event: content_block_delta\ndata: {\"text\":\""
	send(t, pieces, ev+h.key[:8])
	s.has(t, "the event before what may be the key", ev)
	rest := "Z\"}\n\n"
	send(t, pieces, rest)
	s.has(t, "the held bytes and the next piece, the stream still open", ev+h.key[:8]+rest)
	if _, done := s.snapshot(); done {
		t.Fatal("the stream ended before the upstream ended it")
	}
	close(pieces)
	testkit.WaitFor(t, "the stream to end", func() bool { _, done := s.snapshot(); return done })
	if got, _ := s.snapshot(); got != ev+h.key[:8]+rest {
		t.Fatalf("the agent's stream is %q", got)
	}
	if n := h.proxy.Usage().Upstream.KeyEchoes; n != 0 {
		t.Fatalf("%d key echoes counted for an answer without the key", n)
	}
}

// E1, K1: JSON answers that echo the key — an error with its length announced, successes
// with and without a length, the key cut across flushes — reach the agent redacted, with a
// right Content-Length, and the success is metered exactly as before.
func TestKeyScrubJSONAnswersE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	k := h.proxy.scrub
	for _, tc := range []struct {
		name    string
		status  int
		chunked bool
		body    string
	}{
		{"error with length", 401, false, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key: ` + h.key + `"}}`},
		{"success with length", 200, false, `{"type":"message","content":[{"type":"text","text":"you sent ` + h.key + `"}],"usage":{"input_tokens":7,"output_tokens":5}}`},
		{"success chunked", 200, true, `{"type":"message","content":[{"type":"text","text":"` + h.key + ` and ` + h.key + `"}],"usage":{"input_tokens":7,"output_tokens":5}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
					w.WriteHeader(tc.status)
					io.WriteString(w, tc.body)
					return
				}
				w.WriteHeader(tc.status)
				// Cut inside the first key, and between the two.
				i := strings.Index(tc.body, h.key) + 6
				for _, p := range []string{tc.body[:i], tc.body[i : i+len(h.key)], tc.body[i+len(h.key):]} {
					io.WriteString(w, p)
					w.(http.Flusher).Flush()
				}
			})
			before := h.proxy.Usage()
			resp, got, spend := h.sent("/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`, nil)
			after := h.proxy.Usage()
			want := strings.ReplaceAll(tc.body, h.key, string(k.marker))
			if resp.StatusCode != tc.status || got != want || strings.Contains(got, h.key) {
				t.Fatalf("status %d, body %q; want %d, %q", resp.StatusCode, got, tc.status, want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("the redacted answer is not JSON: %s", got)
			}
			if tc.chunked {
				if resp.ContentLength != -1 {
					t.Fatalf("Content-Length %d for an answer of unknown length", resp.ContentLength)
				}
			} else if resp.ContentLength != int64(len(got)) {
				t.Fatalf("Content-Length %d, body %d bytes", resp.ContentLength, len(got))
			}
			if n := after.BytesToAgent - before.BytesToAgent; n != int64(len(got)) {
				t.Fatalf("bytes to agent %d, the agent has %d", n, len(got))
			}
			if after.Upstream.KeyEchoes != before.Upstream.KeyEchoes+1 {
				t.Fatalf("key echoes %d → %d", before.Upstream.KeyEchoes, after.Upstream.KeyEchoes)
			}
			if tc.status == 200 && (spend.Tokens.Input != 7 || spend.Tokens.Output != 5 || spend.UsageMissing != 0 || spend.Responses != 1) {
				t.Fatalf("metered %+v, want the answer's 7 in, 5 out", spend)
			}
		})
	}
	// One log line for the run, naming the host, not the key.
	if n := strings.Count(h.logs.String(), "echoed the operator's key"); n != 1 || !strings.Contains(h.logs.String(), "host="+h.proxy.up.Host) {
		t.Fatalf("%d log lines about the echoed key, want 1 with the host:\n%s", n, h.logs.String())
	}
	if strings.Contains(h.logs.String(), h.key) {
		t.Fatalf("the key is in the log")
	}
}

// E1: the key echoed in the headers — a value, a header's name (which the transport
// recases), a trailer, an early 1xx answer — reaches the agent in none of them.
func TestKeyScrubHeadersE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	marker := string(h.proxy.scrub.marker)
	body := `{"type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":1}}`
	h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Early-Echo", r.Header.Get("X-Api-Key"))
		w.WriteHeader(http.StatusEarlyHints)
		delete(w.Header(), "X-Early-Echo")
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", "x-api-key="+r.Header.Get("X-Api-Key"))
		w.Header().Set("X-Debug-"+r.Header.Get("X-Api-Key"), "1")
		w.Header().Set("Trailer", "X-Echo-Trailer")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // no length: the agent's answer is chunked and carries trailers
		io.WriteString(w, body)
		w.Header().Set("X-Echo-Trailer", r.Header.Get("X-Api-Key"))
	})
	var early []textproto.MIMEHeader
	var mu sync.Mutex
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
		mu.Lock()
		defer mu.Unlock()
		early = append(early, hdr)
		return nil
	}})
	req, _ := http.NewRequestWithContext(ctx, "POST", h.front.URL+"/v1/messages", strings.NewReader(`{"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("X-Api-Key", h.ph)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body {
		t.Fatalf("body %q", got)
	}
	var all strings.Builder
	resp.Header.Write(&all)
	resp.Trailer.Write(&all)
	mu.Lock()
	for _, e := range early {
		http.Header(e).Write(&all)
	}
	mu.Unlock()
	dump := strings.ToLower(all.String())
	if strings.Contains(dump, strings.ToLower(h.key)) {
		t.Fatalf("the key reached the agent in a header:\n%s", all.String())
	}
	for what, v := range map[string]string{"value": resp.Header.Get("X-Echo"), "trailer": resp.Trailer.Get("X-Echo-Trailer")} {
		if !strings.Contains(v, marker) {
			t.Fatalf("%s %q does not carry the marker (headers:\n%s)", what, v, all.String())
		}
	}
	if len(early) == 0 || !strings.Contains(http.Header(early[0]).Get("X-Early-Echo"), marker) {
		t.Fatalf("the early answer's headers %v do not carry the marker", early)
	}
}

// E1: the node asks for an uncompressed answer, and an upstream that compresses all the same
// (the key could pass inside unseen) is answered with a refusal, not passed on.
func TestKeyScrubCompressedAnswerRefusedE1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	h.up.SetAnswer(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, `{"type":"message","content":[{"type":"text","text":"`+h.key+`"}]}`)
		z.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(b.Bytes())
	})
	resp, got := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Anet-Reason") != string(AnswerEncoded) || !strings.Contains(string(got), reasons.Text(AnswerEncoded)) {
		t.Fatalf("status %d, reason %q, body %q", resp.StatusCode, resp.Header.Get("X-Anet-Reason"), got)
	}
	reqs := h.up.Requests()
	if ae := reqs[len(reqs)-1].Header.Get("Accept-Encoding"); ae != "identity" {
		t.Fatalf("the node sent Accept-Encoding %q, want identity", ae)
	}
}

// E1: an upstream that quotes the key in an answer the transport cannot parse (a header line
// without its colon) makes the transport's error carry the key. That error reaches the run's
// log and UpstreamStats.LastError (what `anet autoreply test` shows), so it is redacted too.
func TestKeyScrubTransportErrorE1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Echo "+req.Header.Get("X-Api-Key")+"\r\n\r\n")
			}
			c.Close()
		}
	}()
	h := newHarness(t, "claude", "", Limits{}, func(o *Options) {
		o.Transport = &http.Transport{DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ln.Addr().String())
		}}
	})
	resp, got := h.do("POST", "/v1/messages", nil, `{"messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(got), h.key) {
		t.Fatalf("status %d, body %q", resp.StatusCode, got)
	}
	marker := string(h.proxy.scrub.marker)
	u := h.proxy.Usage().Upstream
	if strings.Contains(u.LastError, h.key) || !strings.Contains(u.LastError, marker) {
		t.Fatalf("LastError %q: want the key redacted to %q", u.LastError, marker)
	}
	if logs := h.logs.String(); strings.Contains(logs, h.key) || !strings.Contains(logs, marker) {
		t.Fatalf("log: want the key redacted to %q:\n%s", marker, logs)
	}
}
