package control

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

// ErrorBody is the JSON shape of every refusal and failure.
type ErrorBody struct {
	Error struct {
		Code    reasons.Code `json:"code"`
		Message string       `json:"message"`
	} `json:"error"`
}

// HandlerFunc answers one request; the result is sent as JSON. A *reasons.Error keeps its
// code; any other error is sent as code bad_request when returned with BadRequest, else internal.
type HandlerFunc func(r *http.Request) (any, error)

// Server is the control socket server.
type Server struct {
	token []byte
	mux   *http.ServeMux
	log   *slog.Logger
	srv   *http.Server
}

// NewServer makes a server that requires tok on every request.
func NewServer(tok string, log *slog.Logger) *Server {
	s := &Server{token: []byte(tok), mux: http.NewServeMux(), log: log}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s
}

type connKey struct{}

// Handle registers h for a method and path, e.g. ("GET", "/v1/status").
func (s *Server) Handle(method, path string, h HandlerFunc) {
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		out, err := h(r)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
}

// BadRequestError marks a caller mistake.
func BadRequestError(format string, args ...any) error {
	return reasons.New(reasons.BadRequest, fmt.Sprintf(format, args...))
}

func writeError(w http.ResponseWriter, err error) {
	var body ErrorBody
	status := http.StatusInternalServerError
	// A *reasons.Error, or a rule's error that carries its code (a config or file rule).
	if code := reasons.CodeOf(err); code != "" {
		body.Error.Code = code
		body.Error.Message = err.Error()
		switch code {
		case reasons.BadRequest:
			status = http.StatusBadRequest
		case reasons.Unauthorized:
			status = http.StatusUnauthorized
		case reasons.OtherUser:
			status = http.StatusForbidden
		case reasons.HelperDown:
			status = http.StatusServiceUnavailable
		case reasons.MessageTooLarge:
			status = http.StatusRequestEntityTooLarge
		case reasons.DiskFull:
			// Nothing was stored and nothing is lost: a condition of the host, not a fault of
			// the node's, and the code says which.
			status = http.StatusInsufficientStorage
		case reasons.UnknownInteraction, reasons.UnknownPeer:
			status = http.StatusNotFound
		default:
			// A refusal with a domain code (a peer rule, a config rule) is the caller's to
			// fix, not a server failure.
			if e, ok := reasons.Lookup(code); ok && e.Kind != reasons.KindNode {
				status = http.StatusBadRequest
			}
		}
	} else {
		body.Error.Code = reasons.Internal
		body.Error.Message = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// ServeHTTP checks the caller, then dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	uid, pid := peerCred(r)
	if uid != os.Getuid() {
		s.log.Warn("control request refused", "reason", "other uid", "uid", uid, "pid", pid, "path", r.URL.Path)
		// Not "wrong token": root reads the owner's token and sends it right, and must be told
		// that it is who it is, not what it sent, that is refused.
		writeError(w, reasons.New(reasons.OtherUser, fmt.Sprintf("anetd runs as uid %d; this request came from uid %d", os.Getuid(), uid)))
		return
	}
	got := []byte(r.Header.Get(TokenHeader))
	if len(got) == 0 || subtle.ConstantTimeCompare(got, s.token) != 1 {
		why := "wrong token"
		if len(got) == 0 {
			why = "missing token"
		}
		// Never log what was sent: a wrong token may be a right token with a typo.
		s.log.Warn("control request refused", "reason", why, "uid", uid, "pid", pid, "path", r.URL.Path)
		writeError(w, reasons.New(reasons.Unauthorized, why))
		return
	}
	s.mux.ServeHTTP(w, r)
}

func peerCred(r *http.Request) (uid, pid int) {
	c, ok := r.Context().Value(connKey{}).(*net.UnixConn)
	if !ok {
		return -1, 0
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0
	}
	uid, pid = -1, 0
	raw.Control(func(fd uintptr) {
		uid, pid, err = socketPeer(int(fd))
	})
	if err != nil {
		return -1, 0
	}
	return uid, pid
}

// Listen creates the socket at path (mode 0600). A stale socket left by a crash is removed;
// a live one means another anetd runs for this user, which is an error.
func Listen(path string) (net.Listener, error) {
	// sun_path holds 108 bytes with the terminating NUL; a longer path fails with a bare
	// EINVAL, so say what is wrong and what to do (the rule anetd --check applies too).
	if err := config.CheckSocketPath("control socket", path); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another anetd is already running", path)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("control socket %s: exists and is not a socket; remove it", path)
		}
		os.Remove(path)
	}
	// No umask games: umask is process-wide, and a helper forked by another goroutine in that
	// window would inherit it. The socket's directory is 0700 (config.EnsurePrivateDir), so
	// nobody else can reach the socket before the chmod.
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(true)
	return l, nil
}

// Serve answers requests on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	err := s.srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for requests in progress.
func (s *Server) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }
