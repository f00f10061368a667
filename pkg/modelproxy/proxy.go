// Package modelproxy is the model-API half of a run's endpoint: a reverse proxy that injects
// the operator's key and applies the model rules (E2–E8) and the model-traffic limits (R1) to
// every request an agent sends.
//
// The policy is handed in: the rule engine (rules.Engine, pkg/modelproxy/rules) is pure,
// request bytes and headers in, a Decision out. The mechanism is fixed here: the HTTP layer
// (Proxy) authenticates the run's placeholder token, enforces limits, runs the engine, and
// hands the rewritten request to an httputil.ReverseProxy whose Rewrite only copies the
// decision and adds the key last — Rewrite cannot fail, so every refusal happens before it.
// Each answer is scrubbed of the key on its way back and metered (pkg/modelproxy/metering).
package modelproxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/modelproxy/metering"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/secret"
)

// Options configure a Proxy. Zero values are safe defaults.
type Options struct {
	// Placeholder is the run's token the agent must send; required.
	Placeholder string
	// Key is the operator's key for the upstream; required. Only Rewrite reveals it.
	Key secret.Value
	// Limits default to R1's figures for each zero field.
	Limits Limits
	// Allowance is the run's spending allowance in micro-units (K2); nil means none (the
	// run is metered, never refused for spend). A non-nil allowance needs a priced model.
	Allowance *money.Micros
	// RootCAs verifies the upstream; nil means the system store (SSL_CERT_FILE works).
	RootCAs *x509.CertPool
	// Transport overrides the upstream transport; nil means the one transport every run on
	// the same upstream and trust store shares (see shared.go).
	Transport http.RoundTripper
	// Logger receives one line per request; nil means slog.Default().
	Logger *slog.Logger
}

// Proxy is one run's model proxy; an http.Handler for the /v1/ paths of the endpoint.
type Proxy struct {
	eng    *rules.Engine
	up     upstream.Upstream
	ph     []byte
	key    secret.Value
	limits Limits
	log    *slog.Logger
	rp     *httputil.ReverseProxy
	c      counters
	meter  *metering.Meter
	// scrub takes the key, and the placeholder, out of every answer (E1).
	scrub *keyScrub
	// unmetered leaves response bodies unread (benchmarks measure what reading costs).
	unmetered bool
	// upstreamStats are the model service's answers, for the run's progress and log.
	upstreamStats upstreamStats
	// receipts are the run's authenticated requests, each kept when it ends (E2–E9, R1, K1).
	receipts receipt.Log[receipt.Model]

	// release gives the shared upstream transport back (nil with Options.Transport).
	release  func()
	inflight sync.WaitGroup
	mu       sync.Mutex // guards closed and inflight.Add
	closed   bool
}

type stateKey struct{}

// reqState carries the engine's decision from the wrapping handler into Rewrite.
type reqState struct {
	d     rules.Decision
	path  string
	query string
	usage *metering.Answer
	// cw is the agent's side, reader what meters the answer (set for a 2xx answer).
	cw     *countingWriter
	reader *metering.Reader
	// rc is the request's receipt; upstreamError marks it failed.
	rc *receipt.Model
}

// New builds the proxy for one run.
func New(e *rules.Engine, up upstream.Upstream, o Options) (*Proxy, error) {
	if len(o.Placeholder) < 32 {
		return nil, errors.New("model proxy: placeholder must be at least 32 characters")
	}
	if o.Key.Empty() {
		return nil, reasons.New(reasons.NoAPIKey, "provider "+up.KeyProvider)
	}
	if err := o.Limits.Check("limits."); err != nil {
		return nil, fmt.Errorf("model proxy: %w", err)
	}
	if o.Allowance != nil && (*o.Allowance < 0 || e.Prices() == nil) {
		if *o.Allowance < 0 {
			return nil, fmt.Errorf("model proxy: allowance %d is negative", *o.Allowance)
		}
		return nil, reasons.New(reasons.ModelUnpriced, "model "+e.Model())
	}
	m := metering.New(e.Model(), e.Prices(), o.Allowance)
	p := &Proxy{eng: e, up: up, ph: []byte(o.Placeholder), key: o.Key, limits: o.Limits.WithDefaults(), log: o.Logger, meter: m}
	if p.log == nil {
		p.log = slog.Default()
	}
	scrub, err := newScrub(o.Key.Reveal(), o.Placeholder, up.Host, p.log)
	if err != nil {
		return nil, err
	}
	p.scrub = scrub
	tr := o.Transport
	if tr == nil {
		tr, p.release = acquireTransport(up, o.RootCAs)
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:   p.rewrite,
		Transport: tr,
		// 0: a JSON answer of known length is not flushed on a timer (a negative interval
		// arms one per request, which wakes a goroutine and the poller) but once metered
		// (serve); the ReverseProxy itself flushes every write of an event stream or of an
		// answer of unknown length, and the metering tap flushes each such piece before
		// it reads it.
		FlushInterval:  0,
		ModifyResponse: p.modifyResponse,
		BufferPool:     copyBuffers,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

// Close ends the proxy: it waits for the requests in flight (their connections are already
// closed by the endpoint, so they end promptly) and gives back the shared upstream transport,
// whose idle connections close when no other run uses them. Later requests are refused.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.inflight.Wait()
	if p.release != nil {
		p.release()
	}
}

// enter counts a request in flight; false once the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

// Usage returns the run's model traffic so far.
func (p *Proxy) Usage() Usage {
	u := p.c.snapshot()
	u.Spend = p.meter.Snapshot()
	u.Upstream = p.upstreamStats.snapshot()
	u.Upstream.KeyEchoes = p.scrub.echoes.Load()
	u.Receipts, u.DroppedReceipts = p.receipts.Snapshot()
	return u
}

// Finish makes the run's spend final once its server has stopped: it waits up to wait for
// the requests still in flight to settle; any that has not is charged its worst case (K1).
func (p *Proxy) Finish(wait time.Duration) { p.meter.Finish(wait) }

// Limits returns the limits in force.
func (p *Proxy) Limits() Limits { return p.limits }

// Engine returns the rule engine.
func (p *Proxy) Engine() *rules.Engine { return p.eng }

// ServeHTTP answers one agent request: refused with a reason, answered locally, or forwarded,
// and logged in one line either way. A request that carries the run's token leaves a receipt,
// kept before the request stops counting as in flight, so Close's wait covers it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	cw := &countingWriter{ResponseWriter: w, total: &p.c.toAgent, scrub: p.scrub}
	path := r.URL.EscapedPath()
	fam := p.eng.FamilyFor(path, r.Header)
	if !p.enter() {
		ref := &rules.Refusal{Code: UpstreamFailed, Status: http.StatusServiceUnavailable, Detail: "the run has ended"}
		p.c.refused(ref.Code)
		writeRefusal(cw, fam, ref)
		cw.end()
		p.logRequest(r.Method, path, "", ref.Status, 0, cw.n, time.Since(start), ref, nil)
		return
	}
	defer p.inflight.Done()
	var rc *receipt.Model // set once the request has shown the run's token
	answered := false
	defer func() {
		if !answered && rc != nil {
			// ReverseProxy aborts a broken stream by panicking (http.ErrAbortHandler): the
			// agent hung up, or the upstream broke off.
			code := reasons.Code("")
			if r.Context().Err() == nil {
				code = UpstreamFailed
			}
			p.keep(rc, cw.status, code)
		}
	}()
	api, ref, notes, in := p.serve(cw, r, path, &rc)
	answered = true
	status := cw.status
	if ref != nil {
		p.c.refused(ref.Code)
		writeRefusal(cw, fam, ref)
		status = ref.Status
	}
	cw.end()
	if rc != nil {
		if rc.API == "" {
			rc.API = string(fam)
		}
		code := rc.Code // upstreamError's
		if ref != nil {
			code = ref.Code
		}
		p.keep(rc, status, code)
	}
	p.logRequest(r.Method, path, api, status, in, cw.n, time.Since(start), ref, notes)
}

// logRequest writes the request's one log line. Attributes are typed (no boxing of each
// value into an interface) and the handler skips the call entirely below its level. The
// record goes to the handler directly, without the caller's program counter: Logger would
// walk the stack for it on every request, and the node's handlers never print a source.
func (p *Proxy) logRequest(method, path string, api rules.API, status int, in, out int64, d time.Duration, ref *rules.Refusal, notes []string) {
	ctx := context.Background()
	h := p.log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "model request", 0)
	r.AddAttrs(slog.String("method", method), slog.String("path", reasons.Clip(path, 80)),
		slog.String("api", string(api)), slog.Int("status", status), slog.Int64("bytes_in", in),
		slog.Int64("bytes_out", out), slog.Int64("duration_ms", d.Milliseconds()))
	if ref != nil {
		r.AddAttrs(slog.String("reason", string(ref.Code)), slog.String("detail", ref.Detail))
	}
	if len(notes) > 0 {
		r.AddAttrs(slog.String("notes", strings.Join(notes, "; ")))
	}
	_ = h.Handle(ctx, r) // a log that cannot be written has nowhere to report that
}

// serve runs auth, routing, limits and rules; it forwards or returns the refusal to write.
// Once the token has passed it sets *rc to the request's receipt and fills in what only it
// knows: the API, the model forwarded and what the request was metered.
func (p *Proxy) serve(w *countingWriter, r *http.Request, path string, rc **receipt.Model) (rules.API, *rules.Refusal, []string, int64) {
	if !p.authorized(r.Header) {
		return "", &rules.Refusal{Code: PlaceholderMissing, Status: http.StatusUnauthorized}, nil, 0
	}
	*rc = newModelReceipt(r.Method, path)
	api, ref := p.eng.Route(r.Method, path, r.Header)
	if ref != nil {
		return api, ref, nil, 0
	}
	(*rc).API = string(api.Family())
	if api.Local() {
		p.c.local.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(p.eng.ModelsList(api))
		return api, nil, nil, 0
	}
	if !p.c.takeRequest(p.limits.Requests) {
		return api, rules.Refuse(RequestLimit, "limit %d", p.limits.Requests), nil, 0
	}
	if r.ContentLength > p.limits.BodyBytes {
		return api, tooLarge(p.limits.BodyBytes), nil, 0
	}
	body, err := readBody(r, p.limits.BodyBytes+1)
	n := int64(len(body))
	if err != nil {
		return api, rules.Refuse(rules.BodyNotJSON, "body could not be read"), nil, n
	}
	if n > p.limits.BodyBytes {
		return api, tooLarge(p.limits.BodyBytes), nil, n
	}
	if !p.c.takeBytes(n, p.limits.TotalBytes) {
		return api, rules.Refuse(RequestDataLimit, "limit %d bytes", p.limits.TotalBytes), nil, n
	}
	d := p.eng.Apply(api, r.Header, body)
	if d.Refusal != nil {
		return api, d.Refusal, d.Notes, n
	}
	upPath, q := p.eng.UpstreamPath(api, r.URL.RawQuery)
	st := &reqState{d: d, path: upPath, query: q, usage: &metering.Answer{}, cw: w, rc: *rc}
	if api != rules.AnthropicCountTokens { // counting tokens is free
		// K2: the request's worst case is reserved before it leaves, and settled on what its
		// response reports when it ends, however it ends (the proxy aborts a broken stream
		// by panicking, so the settling is deferred).
		worst := p.meter.WorstCase(len(d.Body), d.MaxOutput)
		res, ref := p.meter.Reserve(worst, len(d.Body), d.MaxOutput)
		if ref != nil {
			return api, ref, d.Notes, n
		}
		defer func() {
			w.end() // what was held back is metered too
			w.tap = nil
			if st.reader != nil {
				st.reader.End() // what came last: a JSON answer, an event without its blank line
			}
			charge(st.rc, p.meter.Settle(res, st.usage.Outcome()))
			// A JSON answer of known length leaves now, metered: its last bytes reach the
			// agent once the run's usage counts them, and no work of this request is left
			// to compete with the agent for the CPU once it has them.
			w.Flush()
		}()
	}
	// Once the transport has a connection the request may reach the upstream; the moment it
	// is fully written is not reported reliably when the agent hangs up, so having had a
	// connection is what makes a request billable.
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { st.usage.MarkSent() },
	})
	p.c.forwarded.Add(1)
	p.c.upstream.Add(int64(len(d.Body)))
	st.rc.Model = receipt.Clip(p.eng.Model()) // E2: every forwarded request goes out pinned
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, stateKey{}, st)))
	return api, nil, d.Notes, n
}

// readBody reads at most max bytes of r's body, in one allocation when the length is known:
// straight into a buffer of that length and one byte more (bytes.Buffer.ReadFrom would grow it
// to 512 bytes first, and again before each read). A body longer than announced fills it and
// is read on, up to max, as one of unknown length.
func readBody(r *http.Request, max int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n >= max {
		return io.ReadAll(io.LimitReader(r.Body, max))
	}
	b := make([]byte, 0, n+1)
	for len(b) < cap(b) {
		m, err := r.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	rest, err := io.ReadAll(io.LimitReader(r.Body, max-int64(len(b))))
	return append(b, rest...), err
}

// copyBuffers lends the response copy its 32 KiB buffer; without it every request allocates
// one for the garbage collector.
var copyBuffers = &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.p.Get().(*[]byte) }
func (b *bufferPool) Put(s []byte) { b.p.Put(&s) }

func tooLarge(max int64) *rules.Refusal {
	return &rules.Refusal{Code: BodyTooLarge, Status: http.StatusRequestEntityTooLarge, Detail: fmt.Sprintf("limit %d bytes", max)}
}

// authorized compares the placeholder in x-api-key or Authorization: Bearer in constant time.
func (p *Proxy) authorized(h http.Header) bool { return CarriesPlaceholder(h, p.ph) }

// rewrite copies the decision onto the outbound request and adds the key last, after every
// inbound credential is gone (the header set is built from nothing by the engine).
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	st := pr.In.Context().Value(stateKey{}).(*reqState)
	pr.Out.URL = &url.URL{Scheme: p.up.Scheme, Host: p.up.Host, Path: st.path, RawQuery: st.query}
	pr.Out.Host = p.up.Host
	// The engine built this header set for this request alone; the decision lets go of it,
	// so that nothing but the outbound request ever holds the key.
	pr.Out.Header, st.d.Header = st.d.Header, nil
	if st.d.API.Family() == upstream.FamilyAnthropic {
		pr.Out.Header.Set("X-Api-Key", p.key.Reveal())
	} else {
		pr.Out.Header.Set("Authorization", "Bearer "+p.key.Reveal())
	}
	body := st.d.Body
	pr.Out.Body = io.NopCloser(bytes.NewReader(body))
	pr.Out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	// The transport writes Content-Length from this field (E8: recomputed after rewriting).
	pr.Out.ContentLength = int64(len(body))
	pr.Out.TransferEncoding = nil
	pr.Out.Trailer = nil
}

// Response headers that name the operator's account are not the agent's business.
var strippedResponseHeaders = []string{"Set-Cookie", "Anthropic-Organization-Id", "Openai-Organization", "Openai-Project", "Alt-Svc"}

// modifyResponse records the upstream's status, strips the account headers, refuses a
// compressed answer (E1: the key could pass in it unseen) and meters the body (K1).
func (p *Proxy) modifyResponse(resp *http.Response) error {
	p.upstreamStats.answered(resp.StatusCode)
	for _, h := range strippedResponseHeaders {
		delete(resp.Header, h) // canonical already: the transport canonicalises what it reads
	}
	st, ok := resp.Request.Context().Value(stateKey{}).(*reqState)
	if ref := rules.CheckEncoding(resp.Header); ref != nil {
		if ok {
			st.usage.SetStatus(resp.StatusCode) // the upstream answered: a success is billed
		}
		return fmt.Errorf("%w (%s)", errAnswerEncoded, ref.Detail)
	}
	if ok && !p.unmetered {
		meterBody(resp, st)
	}
	return nil
}

// upstreamError answers a failed upstream call in the API's shape. The transport's error
// names the upstream host, and can quote what the upstream sent (a malformed status or header
// line), so an upstream that echoes the key puts it there: the text is redacted before it is
// logged or kept (E1).
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	st := r.Context().Value(stateKey{}).(*reqState)
	msg, _ := p.scrub.replaceFold(err.Error())
	code := UpstreamFailed
	if errors.Is(err, errAnswerEncoded) {
		code = AnswerEncoded
	} else {
		p.upstreamStats.failed(msg)
	}
	st.rc.Code = code
	p.log.Warn("model upstream failed", "host", p.up.Host, "err", msg)
	writeRefusal(w, st.d.API.Family(), &rules.Refusal{Code: code, Status: http.StatusBadGateway})
}

func writeRefusal(w http.ResponseWriter, f upstream.Family, r *rules.Refusal) {
	b := rules.ErrorBody(f, r)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("X-Anet-Reason", string(r.Code))
	w.Header().Set("X-Anet-Refusal", string(r.Code))
	w.WriteHeader(r.Status)
	w.Write(b)
}
