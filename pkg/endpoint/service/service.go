// Package service is anet-egress's side of its privsep socket: it opens and closes each
// run's endpoint (the model proxy and the CONNECT egress, pkg/endpoint) and makes the openai
// back-end's one-shot completions, with the operator's keys, which are read in this process
// only. It also serves one endpoint alone for `anet-egress endpoint`.
package service

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// Service holds the open endpoints, one per run.
type Service struct {
	runsDir string
	log     *slog.Logger
	// rootCAs verifies the model upstream of completions; nil is the system store (E11).
	// Only this package's tests set it, to trust their throw-away CA.
	rootCAs *x509.CertPool

	mu      sync.Mutex // guards the fields that follow
	keys    keys.Keys  // replaced whole by a reload; open endpoints keep the key they have
	keysErr preflight.KeysVerdict
	// catalog is the models catalog new endpoints and completions use, replaced whole by a
	// reload (never changed in place: runs share it); nil is the built-in list, unless
	// modelsErr says the only file read was refused.
	catalog   *rules.Catalog
	modelsErr preflight.ModelsVerdict
	open      map[string]*endpoint.Endpoint
}

// New returns the service, with the built-in models until LoadModels. runsDir holds one 0700
// directory per run with its endpoint socket.
func New(k keys.Keys, runsDir string, log *slog.Logger) *Service {
	return &Service{keys: k, keysErr: preflight.KeysVerdict{OK: true}, modelsErr: preflight.ModelsVerdict{OK: true},
		runsDir: runsDir, log: log, open: map[string]*endpoint.Endpoint{}}
}

// Handlers answer anetd's requests (pkg/egresswire): an endpoint's open, close and usage, a
// completion, a reload of the keys file, and the check of a run for anet doctor.
func (s *Service) Handlers() map[string]privsep.Handler {
	return map[string]privsep.Handler{
		egresswire.MethodOpen:      s.handleOpen,
		egresswire.MethodClose:     s.handleClose,
		egresswire.MethodUsage:     s.handleUsage,
		egresswire.MethodComplete:  s.handleComplete,
		preflight.MethodReloadKeys: s.handleReloadKeys,
		preflight.MethodCheckRun:   s.handleCheckRun,
	}
}

// LoadKeys reads path with keys.Load and, when the file is accepted, makes its keys the ones
// new endpoints and completions use; a refused file leaves the keys as they were (U3), and
// the verdict says why.
func (s *Service) LoadKeys(path string) preflight.KeysVerdict {
	k, err := keys.Load(path)
	v := preflight.VerdictOf(k.Configured(), err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.log.Error("keys file refused", "err", err, "code", string(v.Code))
		s.keysErr = v
		// The providers named are those of the keys still in use.
		v.Providers = s.keys.Configured()
		return v
	}
	s.keys, s.keysErr = k, v
	return v
}

// LoadModels reads the models override file at path ("" none: the built-in list) with
// rules.LoadCatalog, once, and, when it is accepted, makes it the catalog new endpoints
// and completions use. A refused file leaves the catalog as it was (U3): editing the file
// changes no run until a reload accepts it. When no file was ever accepted (a refused file at
// start), runs are refused with the file's code and words until one is.
func (s *Service) LoadModels(path string) preflight.ModelsVerdict {
	cat, err := rules.LoadCatalog(path)
	v := preflight.ModelsVerdictOf(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsErr = v
	if err != nil {
		s.log.Error("models file refused", "err", err, "code", string(v.Code))
		return v
	}
	s.catalog = cat
	return v
}

// currentCatalog is the catalog for an endpoint or a completion that starts now: the last
// file accepted, else the built-in list, unless the only file read was refused.
func (s *Service) currentCatalog() (*rules.Catalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.catalog != nil:
		return s.catalog, nil
	case !s.modelsErr.OK:
		return nil, s.modelsErr.Err()
	}
	return rules.Builtin()
}

// currentKeys are the keys for an endpoint or a completion that starts now.
func (s *Service) currentKeys() keys.Keys {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys
}

// KeysInfo is what anetd learns about the files: the providers' names and the verdicts of
// the keys file and of the models file.
func (s *Service) KeysInfo() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"providers_with_key": s.keys.Configured()}
	if !s.keysErr.OK {
		m["keys_error"], m["keys_code"] = s.keysErr.Message, string(s.keysErr.Code)
	}
	if !s.modelsErr.OK {
		m["models_error"], m["models_code"] = s.modelsErr.Message, string(s.modelsErr.Code)
	}
	return m
}

// handleReloadKeys reads the keys file and the models file again for anetd's reload (U3);
// each file refused keeps what was read from it before.
func (s *Service) handleReloadKeys(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in preflight.ReloadKeysRequest
	if err := req.Decode(&in); err != nil {
		return privsep.Reply{}, err
	}
	m := s.LoadModels(in.Models)
	return privsep.Reply{Body: preflight.CheckAnswer{Keys: s.LoadKeys(in.Path), Models: &m}}, nil
}

// Count is the number of open endpoints.
func (s *Service) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

func (s *Service) handleOpen(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in egresswire.OpenRequest
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
	cat, err := s.currentCatalog()
	var e *endpoint.Endpoint
	if err == nil {
		e, err = OpenEndpoint(filepath.Join(s.runsDir, p.RunID, endpoint.SocketName), p, s.currentKeys(), cat, s.log)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.open, p.RunID)
		return privsep.Reply{}, coded(err)
	}
	s.open[p.RunID] = e
	return privsep.Reply{Body: egresswire.OpenReply{Socket: e.SocketPath(), Addr: e.Addr(), Placeholder: e.Placeholder(), Model: e.Model()}}, nil
}

func (s *Service) handleClose(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in egresswire.CloseRequest
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
	return privsep.Reply{Body: egresswire.CloseReply{Usage: usage}}, nil
}

// handleCheckRun answers whether a run could open its endpoint here, with the keys and models
// in use (anet doctor, through anetd).
func (s *Service) handleCheckRun(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var q preflight.RunQuery
	if err := req.Decode(&q); err != nil {
		return privsep.Reply{}, err
	}
	cat, err := s.currentCatalog()
	if err != nil {
		return privsep.Reply{Body: preflight.RunVerdictOf("", err)}, nil
	}
	p := endpoint.Policy{RunID: "check", Agent: q.Agent, APIBase: q.APIBase, Model: q.Model}
	return privsep.Reply{Body: preflight.RunVerdictOf(endpoint.Check(p, s.currentKeys(), cat))}, nil
}

// coded is err as anetd receives it: with the reason code it carries (a *reasons.Error, or a
// file rule's Reason()), else as it is.
func coded(err error) error {
	if c := reasons.CodeOf(err); c != "" {
		return &privsep.Error{Code: c, Message: err.Error()}
	}
	return err
}

// handleUsage reports an open endpoint's usage without closing it (the progress of `anet
// autoreply test`, S8).
func (s *Service) handleUsage(_ context.Context, req *privsep.Request) (privsep.Reply, error) {
	var in egresswire.CloseRequest
	if err := req.Decode(&in); err != nil {
		return privsep.Reply{}, err
	}
	s.mu.Lock()
	e := s.open[in.RunID]
	s.mu.Unlock()
	if e == nil {
		return privsep.Reply{}, &privsep.Error{Code: reasons.BadRequest, Message: "no open endpoint for run " + in.RunID}
	}
	usage, _ := json.Marshal(e.Usage())
	return privsep.Reply{Body: egresswire.CloseReply{Usage: usage}}, nil
}

// CloseAll closes every endpoint: the helper is stopping, and with it every tunnel and model
// request of every run.
func (s *Service) CloseAll() {
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

// MakeRunsDir creates the runs dir (0700).
func (s *Service) MakeRunsDir() error {
	if err := os.MkdirAll(s.runsDir, 0o700); err != nil {
		return fmt.Errorf("runs dir: %w", err)
	}
	return nil
}
