package endpoint

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/loopback"
	"anet.dev/anet/pkg/modelproxy"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/secret"
)

// SocketName is the endpoint socket's default name inside the run directory.
const SocketName = config.RunSocketName

// settleWait bounds how long Close waits for the run's model requests to settle; closing the
// connections ends them, so it is rarely waited for.
const settleWait = 5 * time.Second

// Options are an endpoint's seams; zero values are the production defaults.
type Options struct {
	// SocketName names the socket in the run directory; "" is SocketName.
	SocketName string
	// Catalog is the models catalog, loaded once by the caller (anet-egress, at start and on
	// each reload) and shared by runs; nil is the built-in list.
	Catalog *rules.Catalog
	// RootCAs verifies the model upstream; nil is the system store.
	RootCAs *x509.CertPool
	// Transport replaces the model upstream transport (benchmarks); nil is the default.
	Transport http.RoundTripper
	// TunnelUsage, if set, adds the tunnel handler's usage to Usage().
	TunnelUsage func() any
	// TunnelReceipts, if set, adds the tunnel handler's receipts, and how many it dropped,
	// to Usage().Receipts.
	TunnelReceipts func() ([]receipt.Tunnel, int)
	// Logger nil means slog.Default().
	Logger *slog.Logger
}

// Usage is what one run did through its endpoint.
type Usage struct {
	RunID              string                 `json:"run_id"`
	Model              modelproxy.Usage       `json:"model"`
	Tunnel             any                    `json:"tunnel,omitempty"`
	Connections        int64                  `json:"connections"`
	ConnectionsRefused int64                  `json:"connections_refused"`
	Refusals           map[reasons.Code]int64 `json:"refusals"`
	// Receipts are the run's tunnels and model requests, one receipt each (H4–H6, R1, K1):
	// anetd decodes them with receipt.Decode and keeps them with the run. Always set, always
	// valid (receipt.Set.Validate) and within receipt.MaxEncodedBytes, so the usage fits in
	// one privsep reply; the model usage above carries none of its own.
	Receipts *receipt.Set `json:"receipts,omitempty"`
}

// Endpoint is one run's endpoint server.
type Endpoint struct {
	policy      Policy
	dir         string
	createdDir  bool
	sock        string
	placeholder string
	// token is placeholder as bytes, made once: loopback mode compares it on every request.
	token []byte
	// addr is the host loopback address in loopback mode (Policy.Listen), "" on a socket.
	// There every request must carry the placeholder before anything else happens.
	addr   string
	v6     *loopback.Pair // holds ::1 on addr's port (loopback mode), or nil
	proxy  *modelproxy.Proxy
	tunnel http.Handler
	ln     *limitListener
	srv    *http.Server
	log    *slog.Logger
	o      Options
	served chan struct{}

	mu       sync.Mutex // guards refusals, strangers and closed
	refusals map[reasons.Code]int64
	// strangers counts requests without the run's token (loopback mode); the first is
	// logged, the rest only counted, so no local process can fill the log.
	strangers int64
	closed    bool
}

// resolve is what an endpoint for p needs before it listens: the upstream (E10), its key,
// and the rule engine with the pinned model (E2).
func resolve(p Policy, k keys.Keys, cat *rules.Catalog) (upstream.Upstream, secret.Value, *rules.Engine, error) {
	up, err := upstream.For(p.Agent, p.APIBase)
	if err != nil {
		return up, secret.Value{}, nil, err
	}
	key, ok := k.Get(up.KeyProvider)
	if !ok {
		return up, secret.Value{}, nil, reasons.New(reasons.NoAPIKey, "provider "+up.KeyProvider)
	}
	if cat == nil {
		if cat, err = rules.Builtin(); err != nil {
			return up, secret.Value{}, nil, err
		}
	}
	eng, err := rules.NewEngine(up, p.Model, cat)
	if err != nil {
		return up, secret.Value{}, nil, err
	}
	return up, key, eng, nil
}

// Check answers whether a run with policy p could open its endpoint here, as Open decides
// it (upstream, key, pinned model), without opening anything; it returns the model the run
// would be pinned to. `anet doctor` asks it of the running anet-egress, or of `anet-egress
// check` when no anetd runs. cat is as Options.Catalog.
func Check(p Policy, k keys.Keys, cat *rules.Catalog) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	_, _, eng, err := resolve(p, k, cat)
	if err != nil {
		return "", err
	}
	return eng.Model(), nil
}

// Open starts the endpoint of run p: it makes dir (0700; an existing dir must be ours and
// 0700), listens on dir/endpoint.sock (0600), and serves until Close. With p.Listen
// loopback it listens on an ephemeral port of 127.0.0.1 instead (dir is not used) and
// refuses every request and CONNECT without the run's placeholder (M1). The key for p's
// upstream must be in k. tunnel handles CONNECT; nil refuses every CONNECT.
func Open(dir string, p Policy, k keys.Keys, tunnel http.Handler, o Options) (*Endpoint, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("open endpoint: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("run", p.RunID)
	up, key, eng, err := resolve(p, k, o.Catalog)
	if err != nil {
		return nil, fmt.Errorf("open endpoint: %w", err)
	}
	ph, err := NewPlaceholder()
	if err != nil {
		return nil, fmt.Errorf("open endpoint: %w", err)
	}
	proxy, err := modelproxy.New(eng, up, modelproxy.Options{
		Placeholder: ph, Key: key, Limits: p.Limits.Model, Allowance: p.Allowance,
		RootCAs: o.RootCAs, Transport: o.Transport, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("open endpoint: %w", err)
	}
	opened := false
	defer func() {
		if !opened {
			proxy.Close() // gives back its share of the upstream connections
		}
	}()
	e := &Endpoint{policy: p, placeholder: ph, token: []byte(ph), proxy: proxy,
		tunnel: tunnel, log: log, o: o, refusals: map[reasons.Code]int64{}, served: make(chan struct{})}
	var ln net.Listener
	if p.Listen == egresswire.ListenLoopback {
		ln, err = e.listenLoopback()
	} else {
		ln, err = e.listenSocket(dir, o.SocketName)
	}
	if err != nil {
		return nil, fmt.Errorf("open endpoint: %w", err)
	}
	e.ln = newLimitListener(ln, p.Limits.ConnectionLimit())
	e.srv = &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// HTTP/1.1 only: the agent talks plain HTTP on its loopback.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	opened = true
	go func() {
		defer close(e.served)
		if err := e.srv.Serve(e.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("endpoint server stopped", "err", err)
		}
	}()
	log.Info("endpoint open", "socket", e.sock, "addr", e.addr, "agent", p.Agent, "model", eng.Model(), "upstream", up.Host)
	return e, nil
}

// listenSocket listens on dir/name (0600) in a run dir it makes 0700 (or accepts if ours).
func (e *Endpoint) listenSocket(dir, name string) (net.Listener, error) {
	if name == "" {
		name = SocketName
	}
	if name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("socket name %q must be a plain file name", name)
	}
	sock := filepath.Join(dir, name)
	// The rule anetd checked at start for the longest run socket, in the same words.
	if err := config.CheckSocketPath("run endpoint socket", sock); err != nil {
		return nil, err
	}
	created, err := makeRunDir(dir, name)
	if err != nil {
		return nil, err
	}
	e.dir, e.createdDir, e.sock = dir, created, sock
	ln, err := net.Listen("unix", sock)
	if err != nil {
		e.removeDir()
		return nil, fmt.Errorf("listen %s: %w", sock, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		e.removeDir()
		return nil, fmt.Errorf("chmod %s: %w", sock, err)
	}
	return ln, nil
}

// listenLoopback listens on an ephemeral port of 127.0.0.1. Any local process can connect
// there, so ServeHTTP answers nothing but a refusal to a request without the run's token.
// The same port of ::1 is held too (pkg/loopback): a Seatbelt profile's "localhost:P" lets the
// run reach both, and no other program may listen where the run can send.
func (e *Endpoint) listenLoopback() (net.Listener, error) {
	p, err := loopback.Listen()
	if err != nil {
		return nil, err
	}
	e.v6, e.addr = p, p.Listener.Addr().String()
	return p.Listener, nil
}

// makeRunDir creates dir 0700, or accepts an existing directory only if it is ours, 0700 and
// not a symlink: the socket's safety rests on nobody else reaching the directory.
func makeRunDir(dir, sockName string) (bool, error) {
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		return true, os.Chmod(dir, 0o700)
	}
	if !errors.Is(err, os.ErrExist) {
		return false, fmt.Errorf("make run dir %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return false, fmt.Errorf("stat run dir %s: %w", dir, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || st == nil || int(st.Uid) != os.Geteuid() {
		return false, fmt.Errorf("run dir %s exists and is not a 0700 directory owned by this user", dir)
	}
	if _, err := os.Lstat(filepath.Join(dir, sockName)); err == nil {
		return false, fmt.Errorf("run dir %s already holds an endpoint socket", dir)
	}
	return false, nil
}

// NewPlaceholder returns a fresh run token: 32 random bytes in hex, what the agent sends in
// place of a key.
func NewPlaceholder() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("placeholder: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Placeholder is the run's token, to put in the agent's environment. It is worthless outside
// this endpoint and dies with it.
func (e *Endpoint) Placeholder() string { return e.placeholder }

// SocketPath is the endpoint socket to bind into the sandbox; "" in loopback mode.
func (e *Endpoint) SocketPath() string { return e.sock }

// Addr is the host loopback address ("127.0.0.1:P") in loopback mode; "" on a socket.
func (e *Endpoint) Addr() string { return e.addr }

// Model is the pinned model id.
func (e *Endpoint) Model() string { return e.proxy.Engine().Model() }

// Usage returns what the run did so far.
func (e *Endpoint) Usage() Usage {
	e.mu.Lock()
	r := maps.Clone(e.refusals)
	e.mu.Unlock()
	u := Usage{RunID: e.policy.RunID, Model: e.proxy.Usage(), Connections: e.ln.total.Load(), ConnectionsRefused: e.ln.refused.Load(), Refusals: r}
	if e.o.TunnelUsage != nil {
		u.Tunnel = e.o.TunnelUsage()
	}
	var tunnels []receipt.Tunnel
	var droppedTunnels int
	if e.o.TunnelReceipts != nil {
		tunnels, droppedTunnels = e.o.TunnelReceipts()
	}
	set := e.validReceipts(receipt.Of(tunnels, droppedTunnels, u.Model.Receipts, u.Model.DroppedReceipts)).Fit(receipt.MaxEncodedBytes)
	u.Receipts = &set
	u.Model.Receipts, u.Model.DroppedReceipts = nil, 0
	return u
}

// validReceipts keeps the receipts that pass receipt.Set.Validate and counts the others as
// dropped, so the set anetd decodes is never refused whole for one bad receipt. The proxies
// build valid receipts; one that is not is a bug, logged.
func (e *Endpoint) validReceipts(s receipt.Set) receipt.Set {
	if s.Validate() == nil {
		return s
	}
	out := receipt.Set{DroppedTunnels: s.DroppedTunnels, DroppedModel: s.DroppedModel}
	for _, t := range s.Tunnels {
		if err := (receipt.Set{Tunnels: []receipt.Tunnel{t}}).Validate(); err != nil {
			e.log.Error("tunnel receipt dropped", "err", err)
			out.DroppedTunnels++
			continue
		}
		out.Tunnels = append(out.Tunnels, t)
	}
	for _, m := range s.Model {
		if err := (receipt.Set{Model: []receipt.Model{m}}).Validate(); err != nil {
			e.log.Error("model receipt dropped", "err", err)
			out.DroppedModel++
			continue
		}
		out.Model = append(out.Model, m)
	}
	return out
}

// Close ends every connection and tunnel, and removes the socket and the run directory.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	err := e.srv.Close()
	e.ln.closeAll()
	if e.v6 != nil {
		e.v6.CloseHeld() // its 127.0.0.1 side is the server's, closed above
	}
	// The agent can have a whole answer before its handler has metered it: the run's spend
	// is final only once every request has settled (K1).
	e.proxy.Finish(settleWait)
	switch t := e.tunnel.(type) {
	case interface{ Close() }:
		t.Close()
	case io.Closer:
		t.Close()
	}
	<-e.served
	// After the server: its connections are closed, so requests in flight end and the run's
	// share of the upstream connections is given back.
	e.proxy.Close()
	if e.sock != "" {
		if rerr := os.Remove(e.sock); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	e.removeDir()
	u := e.proxy.Usage()
	e.mu.Lock()
	strangers := e.strangers
	e.mu.Unlock()
	e.log.Info("endpoint closed", "requests", u.Requests, "cost", u.Spend.Cost.String(), "usage_missing", u.Spend.UsageMissing, "refused_without_token", strangers)
	return err
}

func (e *Endpoint) removeDir() {
	if e.createdDir {
		os.RemoveAll(e.dir)
	}
}

func (e *Endpoint) refused(c reasons.Code) {
	e.mu.Lock()
	e.refusals[c]++
	e.mu.Unlock()
}

// ServeHTTP routes one request.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.addr != "" && !e.carriesToken(r) {
		e.refuseStranger(w, r)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodConnect:
		if e.tunnel == nil {
			e.refuse(w, http.StatusForbidden, TunnelUnavailable)
			return
		}
		e.tunnel.ServeHTTP(w, r)
	case r.URL.IsAbs() || r.URL.Opaque != "":
		// A plain-HTTP proxy request (absolute URI): nothing here forwards those.
		e.refuse(w, http.StatusNotFound, NotFound)
	case path == "/v1" || strings.HasPrefix(path, "/v1/"):
		e.proxy.ServeHTTP(w, r)
	case path == "/" && r.Method == http.MethodHead:
		w.WriteHeader(http.StatusOK)
	case path == "/api" || strings.HasPrefix(path, "/api/"):
		// Claude Code's own calls (hello, event logging): answered here, never forwarded.
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			io.WriteString(w, "{}")
		}
	default:
		e.refuse(w, http.StatusNotFound, NotFound)
	}
}

// carriesToken reports whether r carries the run's placeholder, compared in constant time:
// a model request as its API key, a CONNECT in Proxy-Authorization (Basic with the
// placeholder as password, as clients send a proxy URL's user info, or Bearer).
func (e *Endpoint) carriesToken(r *http.Request) bool {
	ph := e.token
	if r.Method != http.MethodConnect {
		return modelproxy.CarriesPlaceholder(r.Header, ph)
	}
	ok := false
	for _, v := range r.Header.Values("Proxy-Authorization") {
		scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
		cred = strings.TrimSpace(cred)
		switch {
		case strings.EqualFold(scheme, "bearer"):
			ok = subtle.ConstantTimeCompare([]byte(cred), ph) == 1 || ok
		case strings.EqualFold(scheme, "basic"):
			raw, err := base64.StdEncoding.DecodeString(cred)
			if err != nil {
				continue
			}
			_, pass, _ := strings.Cut(string(raw), ":")
			ok = subtle.ConstantTimeCompare([]byte(pass), ph) == 1 || ok
		}
	}
	return ok
}

// refuseStranger answers a request without the run's token (loopback mode): a refusal and
// nothing else, and the connection is closed. The first one is logged, every one counted.
func (e *Endpoint) refuseStranger(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.strangers++
	first := e.strangers == 1
	e.mu.Unlock()
	if first {
		e.log.Warn("request without the run's token refused; later ones are only counted",
			"method", reasons.Clip(r.Method, 16), "path", reasons.Clip(r.URL.Path, 80), "remote", r.RemoteAddr)
	}
	w.Header().Set("Connection", "close")
	status := http.StatusUnauthorized
	if r.Method == http.MethodConnect {
		status = http.StatusProxyAuthRequired
		w.Header().Set("Proxy-Authenticate", `Basic realm="anet"`)
	}
	e.refuse(w, status, TokenMissing)
}

func (e *Endpoint) refuse(w http.ResponseWriter, status int, c reasons.Code) {
	e.refused(c)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Anet-Reason", string(c))
	w.WriteHeader(status)
	fmt.Fprintf(w, "anet: %s\n", reasons.Text(c))
}
