package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/endpoint/service"
)

func init() { commands = append(commands, endpointCommand()) }

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
			return service.ServeOne(ctx, service.OneConfig{
				PolicyPath: c.String("policy"), SocketPath: c.String("socket"),
				KeysPath: c.String("keys"), ModelsPath: c.String("models"),
			}, os.Stdout, newLogger())
		},
	}
}
