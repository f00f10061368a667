package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/privsep"
)

// OneConfig is what `anet-egress endpoint` needs, after flag parsing.
type OneConfig struct {
	PolicyPath string
	SocketPath string
	KeysPath   string
	ModelsPath string
}

// maxPolicySize bounds the policy file; a policy is a few hundred bytes.
const maxPolicySize = 1 << 20

// ReadPolicy reads a run policy file (JSON), strictly: unknown fields, trailing data and an
// invalid policy are errors naming the file.
func ReadPolicy(path string) (endpoint.Policy, error) {
	var p endpoint.Policy
	f, err := os.Open(path)
	if err != nil {
		return p, fmt.Errorf("read policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	if err != nil {
		return p, fmt.Errorf("read policy %s: %w", path, err)
	}
	if len(data) > maxPolicySize {
		return p, fmt.Errorf("read policy %s: larger than %d bytes", path, maxPolicySize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("read policy %s: %w", path, err)
	}
	if dec.More() {
		return p, fmt.Errorf("read policy %s: data after the JSON object", path)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("read policy %s: %w", path, err)
	}
	return p, nil
}

// ServeOne is `anet-egress endpoint`: it opens one run's endpoint as cfg says, prints its
// socket and placeholder as one JSON line on stdout, serves until ctx ends, then closes the
// endpoint and logs its usage.
func ServeOne(ctx context.Context, cfg OneConfig, stdout io.Writer, log *slog.Logger) error {
	// This process holds the operator's key too: no core file may carry it to disk.
	if err := privsep.NoCoreDumps(); err != nil {
		return err
	}
	p, err := ReadPolicy(cfg.PolicyPath)
	if err != nil {
		return err
	}
	var k keys.Keys
	if cfg.KeysPath != "" {
		if k, err = keys.Load(cfg.KeysPath); err != nil {
			return err
		}
	}
	// The models file is read once, as serve reads it.
	cat, err := rules.LoadCatalog(cfg.ModelsPath)
	if err != nil {
		return err
	}
	e, err := OpenEndpoint(cfg.SocketPath, p, k, cat, log)
	if err != nil {
		return err
	}
	out, _ := json.Marshal(map[string]string{"socket": e.SocketPath(), "addr": e.Addr(), "placeholder": e.Placeholder()})
	if _, err := fmt.Fprintf(stdout, "%s\n", out); err != nil {
		e.Close()
		return fmt.Errorf("print endpoint: %w", err)
	}
	<-ctx.Done()
	err = e.Close()
	log.Info("endpoint usage", "usage", e.Usage())
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("close endpoint: %w", err)
	}
	return nil
}

// OpenEndpoint opens one run's endpoint at sock: the model proxy with the operator's key and
// the CONNECT tunnel handler for the run's allowed hosts. Closing the endpoint ends both.
// Both `endpoint` and `serve` open endpoints this way. log is not yet tagged with the run:
// endpoint.Open adds the run id to its own lines, and the tunnel gets it here.
func OpenEndpoint(sock string, p endpoint.Policy, k keys.Keys, cat *rules.Catalog, log *slog.Logger) (*endpoint.Endpoint, error) {
	// H3: no allowed host may be a model host, the api_base's included; checked here with
	// the api_base, and again by the tunnel handler.
	if err := egress.ValidateAllowList(p.Allow, []string{p.APIBase}); err != nil {
		return nil, fmt.Errorf("policy allow: %w", err)
	}
	tunnel, err := egress.NewProxy(egress.Policy{Allow: p.Allow}, egress.Options{Logger: log.With("run", p.RunID)})
	if err != nil {
		return nil, fmt.Errorf("endpoint tunnel: %w", err)
	}
	e, err := endpoint.Open(filepath.Dir(sock), p, k, tunnel, endpoint.Options{
		SocketName:     filepath.Base(sock),
		Catalog:        cat,
		TunnelUsage:    func() any { return tunnel.Usage() },
		TunnelReceipts: tunnel.Receipts,
		Logger:         log,
	})
	if err != nil {
		tunnel.Close()
		return nil, err
	}
	return e, nil
}
