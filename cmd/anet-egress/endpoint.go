package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/egress"
	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/privsep"
)

func init() { commands = append(commands, endpointCommand()) }

// endpointConfig is what the endpoint subcommand needs, after flag parsing.
type endpointConfig struct {
	PolicyPath string
	SocketPath string
	KeysPath   string
	ModelsPath string
}

func endpointCommand() *cli.Command {
	return &cli.Command{
		Name:  "endpoint",
		Usage: "serve one run's endpoint without anetd (debug a policy; tests)",
		Description: "Reads a run policy (JSON: run_id, agent, api_base, model, allow, limits), opens the\n" +
			"endpoint socket at --socket (its directory is created 0700, or must already be a 0700\n" +
			"directory of this user), prints {\"socket\":…,\"placeholder\":…} on stdout and serves until\n" +
			"SIGTERM or SIGINT. Logs go to stderr.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "policy", Usage: "run policy `FILE` (JSON)", Required: true},
			&cli.StringFlag{Name: "socket", Usage: "endpoint socket `PATH`", Required: true},
			&cli.StringFlag{Name: "keys", Usage: "the operator's keys `FILE` (needed for the agent's provider: without its key the endpoint does not start, no_api_key)"},
			&cli.StringFlag{Name: "models", Usage: "models override `FILE` merged over the built-in list"},
		},
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runEndpoint(ctx, endpointConfig{
				PolicyPath: c.String("policy"), SocketPath: c.String("socket"),
				KeysPath: c.String("keys"), ModelsPath: c.String("models"),
			}, os.Stdout, newLogger())
		},
	}
}

// maxPolicySize bounds the policy file; a policy is a few hundred bytes.
const maxPolicySize = 1 << 20

func readPolicy(path string) (endpoint.Policy, error) {
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

// runEndpoint serves until ctx ends, then closes the endpoint and logs its usage.
func runEndpoint(ctx context.Context, cfg endpointConfig, stdout io.Writer, log *slog.Logger) error {
	// This process holds the operator's key too: no core file may carry it to disk.
	if err := privsep.NoCoreDumps(); err != nil {
		return err
	}
	p, err := readPolicy(cfg.PolicyPath)
	if err != nil {
		return err
	}
	var k keys.Keys
	if cfg.KeysPath != "" {
		if k, err = keys.Load(cfg.KeysPath); err != nil {
			return err
		}
	}
	e, err := openEndpoint(cfg.SocketPath, p, k, cfg.ModelsPath, log)
	if err != nil {
		return err
	}
	out, _ := json.Marshal(map[string]string{"socket": e.SocketPath(), "placeholder": e.Placeholder()})
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

// openEndpoint opens one run's endpoint at sock: the model proxy with the operator's key and
// the CONNECT tunnel handler for the run's allowed hosts. Closing the endpoint ends both.
// Both `endpoint` and `serve` open endpoints this way. log is not yet tagged with the run:
// endpoint.Open adds the run id to its own lines, and the tunnel gets it here.
func openEndpoint(sock string, p endpoint.Policy, k keys.Keys, modelsPath string, log *slog.Logger) (*endpoint.Endpoint, error) {
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
		ModelsOverride: modelsPath,
		TunnelUsage:    func() any { return tunnel.Usage() },
		Logger:         log,
	})
	if err != nil {
		tunnel.Close()
		return nil, err
	}
	return e, nil
}
