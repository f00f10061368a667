package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/autoreply/completion"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/endpoint/runpolicy"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

func init() { commands = append(commands, serveCommand()) }

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve anetd over fd 3 (started by anetd, not by hand)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keys", Usage: "the operator's keys `FILE` (read here, never by anetd)", Required: true},
			&cli.StringFlag{Name: "runs-dir", Usage: "`DIR` for the runs' endpoint sockets (0700; one 0700 subdirectory per run)", Required: true},
			&cli.StringFlag{Name: "models", Usage: "models override `FILE` merged over the built-in list"},
		},
		Action: func(c *cli.Context) error {
			log := newLogger()
			// The keys are read once, here, and stay in this process. anetd only ever
			// learns which providers have one.
			k, err := keys.Load(c.String("keys"))
			keysErr := ""
			if err != nil {
				// Keep serving so anetd can show the reason; endpoints refuse to open with
				// no_api_key until the file is fixed and the helper restarted.
				keysErr = err.Error()
				log.Error("keys file refused", "err", err)
			}
			s := &server{keys: k, runsDir: c.String("runs-dir"), models: c.String("models"), log: log, open: map[string]*endpoint.Endpoint{}}
			if err := os.MkdirAll(s.runsDir, 0o700); err != nil {
				return fmt.Errorf("runs dir: %w", err)
			}
			info := func() map[string]any {
				m := map[string]any{"providers_with_key": k.Configured()}
				if keysErr != "" {
					m["keys_error"] = keysErr
				}
				return m
			}
			handlers := map[string]privsep.Handler{
				privsep.MethodStatus: func(context.Context, *privsep.Request) (privsep.Reply, error) {
					st := info()
					st["pid"] = os.Getpid()
					st["endpoints_open"] = s.count()
					return privsep.Reply{Body: st}, nil
				},
				runpolicy.MethodOpen:  s.handleOpen,
				runpolicy.MethodClose: s.handleClose,
				completion.Method:     s.handleComplete,
			}
			err = privsep.ServeHelper(c.Context, "egress", handlers, info, log)
			// EOF of fd 3 or a signal: every endpoint closes with the helper, and with it every
			// tunnel and model request of every run.
			s.closeAll()
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
}

// server holds the open endpoints, one per run.
type server struct {
	keys    keys.Keys
	runsDir string
	models  string
	log     *slog.Logger

	mu   sync.Mutex // guards open
	open map[string]*endpoint.Endpoint
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

func (s *server) handleOpen(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in runpolicy.OpenRequest
	if err := req.Decode(&in); err != nil {
		return privsep.Reply{}, err
	}
	p := in.Policy
	if err := p.Validate(); err != nil {
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: err.Error()}
	}
	s.mu.Lock()
	if _, dup := s.open[p.RunID]; dup {
		s.mu.Unlock()
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: "an endpoint for run " + p.RunID + " is already open"}
	}
	s.open[p.RunID] = nil // reserve the id while opening
	s.mu.Unlock()
	e, err := openEndpoint(filepath.Join(s.runsDir, p.RunID, endpoint.SocketName), p, s.keys, s.models, s.log)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.open, p.RunID)
		var re *reasons.Error
		if errors.As(err, &re) {
			return privsep.Reply{}, &privsep.Error{Code: re.Code, Message: err.Error()}
		}
		return privsep.Reply{}, err
	}
	s.open[p.RunID] = e
	return privsep.Reply{Body: runpolicy.OpenReply{Socket: e.SocketPath(), Placeholder: e.Placeholder(), Model: e.Model()}}, nil
}

func (s *server) handleClose(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in runpolicy.CloseRequest
	if err := req.Decode(&in); err != nil {
		return privsep.Reply{}, err
	}
	s.mu.Lock()
	e := s.open[in.RunID]
	if e != nil {
		delete(s.open, in.RunID)
	}
	s.mu.Unlock()
	if e == nil {
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: "no open endpoint for run " + in.RunID}
	}
	err := e.Close()
	usage, _ := json.Marshal(e.Usage())
	if err != nil {
		s.log.Warn("close endpoint", "run", in.RunID, "err", err)
	}
	return privsep.Reply{Body: runpolicy.CloseReply{Usage: usage}}, nil
}

func (s *server) closeAll() {
	s.mu.Lock()
	open := s.open
	s.open = map[string]*endpoint.Endpoint{}
	s.mu.Unlock()
	for id, e := range open {
		if e != nil {
			e.Close()
			s.log.Info("endpoint closed at shutdown", "run", id)
		}
	}
}
