// Package dashboard is the operator's local web view of the node: its state at a glance,
// the tasks in and out with their runs, the runs in progress (live), the day's and the last
// month's spend, and the evidence chain with its verification; and two actions, trusting a
// peer and replying by hand, each behind a confirmation.
//
// It reads the node through the control API's own handlers, in process (control.Server's
// Call): the pages show what `anet status`, `anet inbox`, `anet show` and `anet evidence`
// show, from the same code. Its pages carry peers' and agents' text, so (U1):
//
//   - every such string is escaped by html/template and, before that, rendered by
//     termsafe.Page, so control and bidi characters and everything a browser draws as
//     nothing are shown as visible escapes; none of it is ever made a link;
//   - the pages run no inline script or style and load nothing from elsewhere: the
//     Content-Security-Policy allows only the dashboard's own embedded CSS and JS;
//   - the listener is loopback only (config refuses anything else), every request must name
//     the listener itself in Host (a DNS-rebinding page names its own host), and the pages
//     need a session that only a one-time login URL from `anet dashboard` (over the control
//     socket) opens;
//   - a request that changes state is a POST whose Origin is the dashboard's own and whose
//     form carries the session's CSRF token, and trust and reply take a second, confirming
//     POST.
//
// /metrics, when a metrics handler is given, is for a scraper: it needs the bearer token
// from dashboard.metrics_token_file and no session.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Node is how the dashboard reads and changes the node: one control API request, answered
// by the control server's handlers (control.Server.Call), JSON in and out.
type Node interface {
	Call(ctx context.Context, method, path string, in, out any) error
}

// Options configure a dashboard.
type Options struct {
	Node Node
	// Metrics is served at /metrics to a caller with the bearer token; nil answers 404.
	Metrics http.Handler
	// MetricsTokenFile holds that token (re-read on every request, so a new token needs no
	// restart); "" refuses every /metrics request. SetMetricsTokenFile changes it.
	MetricsTokenFile string
	Log              *slog.Logger
	// Now is the clock of logins and sessions; nil is time.Now.
	Now func() time.Time
	// Poll is how often /events/runs reads the node's status; 0 is one second.
	Poll time.Duration
}

// Lifetimes of what the dashboard hands out.
const (
	LoginLifetime   = 2 * time.Minute
	SessionLifetime = 12 * time.Hour
)

// Server is one dashboard. It serves on the listener given to Serve.
type Server struct {
	o       Options
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux
	pages   *pages
	auth    *auth
	tokFile atomic.Pointer[string]
	streams atomic.Int32

	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	srv    *http.Server
	origin string          // "http://host:port", the login URL's base and the one Origin accepted
	hosts  map[string]bool // the Host values that name this listener
}

// New makes a dashboard; Serve starts it.
func New(o Options) (*Server, error) {
	if o.Node == nil {
		return nil, errors.New("dashboard: no node")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Log, now: o.Now, pages: p, auth: newAuth(o.Now)}
	s.tokFile.Store(&o.MetricsTokenFile)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// SetMetricsTokenFile makes path the bearer token's file from the next request on (a reload).
func (s *Server) SetMetricsTokenFile(path string) { s.tokFile.Store(&path) }

// Listen opens the dashboard's listener on addr (dashboard.listen, checked by pkg/config to
// be loopback) and serves on it until Close. The error names the address.
func (s *Server) Listen(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard.listen %s: %w", addr, err)
	}
	name, _, _ := net.SplitHostPort(addr)
	srv, err := s.bind(l, name)
	if err != nil {
		return err
	}
	go srv.Serve(l)
	return nil
}

// Serve answers requests on l until Close. name is the host the operator configured
// (localhost, 127.0.0.1 or ::1), used in the login URL; "" uses l's own address.
func (s *Server) Serve(l net.Listener, name string) error {
	srv, err := s.bind(l, name)
	if err != nil {
		return err
	}
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bind makes the dashboard l's: its origin and the Host values that name it.
func (s *Server) bind(l net.Listener, name string) (*http.Server, error) {
	tcp, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		l.Close()
		return nil, fmt.Errorf("dashboard: listener on %s is not TCP", l.Addr())
	}
	if !tcp.IP.IsLoopback() {
		// pkg/config allows only loopback addresses; a listener given in code is held to it too.
		l.Close()
		return nil, fmt.Errorf("dashboard: %s is not a loopback address", l.Addr())
	}
	port := strconv.Itoa(tcp.Port)
	if name == "" {
		name = tcp.IP.String()
	}
	own := net.JoinHostPort(name, port)
	hosts := map[string]bool{strings.ToLower(own): true, net.JoinHostPort(tcp.IP.String(), port): true, "localhost:" + port: true}
	if tcp.IP.To4() != nil {
		hosts["127.0.0.1:"+port] = true
	}
	srv := &http.Server{
		Handler: s,
		// No ReadTimeout: it would end the live page's stream; a form's body has its own
		// deadline (action).
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		l.Close()
		return nil, http.ErrServerClosed
	}
	if s.srv != nil {
		l.Close()
		return nil, errors.New("dashboard: already serving")
	}
	s.srv, s.origin, s.hosts = srv, "http://"+own, hosts
	s.log.Info("dashboard listening", "addr", l.Addr().String(), "url", "http://"+own+"/")
	return srv, nil
}

// Addr is the address the dashboard serves on ("" before Serve).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimPrefix(s.origin, "http://")
}

// Close stops the listener and ends every request, live streams included; logins and
// sessions end with it.
func (s *Server) Close(ctx context.Context) error {
	s.cancel()
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

// ownOrigin and allowedHost read what Serve set.
func (s *Server) ownOrigin() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.origin
}

func (s *Server) allowedHost(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts[strings.ToLower(host)]
}

// allowedOrigin reports whether o is the dashboard's own origin: http:// and a host that
// names this listener.
func (s *Server) allowedOrigin(o string) bool {
	host, ok := strings.CutPrefix(o, "http://")
	return ok && s.allowedHost(host)
}
