package privsep

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"anet.dev/anet/pkg/reasons"
)

// Methods every helper answers.
const (
	MethodHello    = "hello"
	MethodStatus   = "status"
	MethodShutdown = "shutdown"
	// MethodPing is the supervisor's liveness check (N2); it is answered by the protocol
	// loop itself, so a helper answers as long as that loop runs.
	MethodPing = "ping"
)

// HelloRequest opens the exchange: the parent says which versions it speaks.
type HelloRequest struct {
	Versions []int `json:"versions"`
}

// HelloReply is the helper's answer.
type HelloReply struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	// Info is helper-specific (e.g. which providers have a key); never a secret.
	Info map[string]any `json:"info,omitempty"`
}

// HelperFD is the descriptor number the helper's socketpair end has in the helper.
const HelperFD = 3

// ServeHelper is the helper side: it speaks the protocol on fd 3 until EOF, a shutdown
// request, SIGTERM or SIGINT, then cancels ctx for every handler and waits for them, so the
// helper ends all its work (runs, endpoints) before it returns. hello and shutdown are
// answered here; info is added to the hello reply.
func ServeHelper(ctx context.Context, name string, handlers map[string]Handler, info func() map[string]any, log *slog.Logger) error {
	// A helper's files, directories and sockets are its own: set the umask here rather than
	// inherit whatever the parent had at fork time.
	syscall.Umask(0o077)
	// A helper's memory may hold a key (anet-egress) or a run's placeholder: no core dump may
	// ever carry it to disk.
	if err := NoCoreDumps(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	conn, err := FromFD(HelperFD)
	if err != nil {
		return fmt.Errorf("%s: no protocol socket on fd %d (start it through anetd): %w", name, HelperFD, err)
	}
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	all := map[string]Handler{}
	for k, v := range handlers {
		all[k] = v
	}
	all[MethodHello] = func(ctx context.Context, req *Request) (Reply, error) {
		var h HelloRequest
		if err := req.Decode(&h); err != nil {
			return Reply{}, err
		}
		for _, v := range h.Versions {
			if v == Version {
				r := HelloReply{Version: Version, Name: name, PID: os.Getpid()}
				if info != nil {
					r.Info = info()
				}
				return Reply{Body: r}, nil
			}
		}
		return Reply{}, &Error{Code: reasons.BadRequest, Message: fmt.Sprintf("no common protocol version (parent speaks %v, %s speaks %d)", h.Versions, name, Version)}
	}
	// shutdown only acknowledges: the parent then closes its end, and the EOF is what ends
	// the helper. One way to stop (EOF) means a parent that dies without asking stops its
	// helpers exactly like one that asks.
	all[MethodShutdown] = func(context.Context, *Request) (Reply, error) {
		return Reply{Body: map[string]bool{"ok": true}}, nil
	}
	all[MethodPing] = func(context.Context, *Request) (Reply, error) { return Reply{}, nil }
	p := NewPeer(conn, all, nil, log)
	err = p.Run(ctx)
	log.Info("helper stopping")
	return err
}

// NoCoreDumps sets RLIMIT_CORE to 0 (soft and hard), so this process never writes a core
// file, whatever the system's core pattern: its memory may hold a key. anetd calls it too (it
// holds the identity key).
func NoCoreDumps() error {
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("set RLIMIT_CORE 0: %w", err)
	}
	return nil
}
