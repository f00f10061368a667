package main

import (
	"context"
	"errors"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/endpoint/service"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/privsep"
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
			// The keys are read here (at start and on each reload) and stay in this
			// process. anetd only ever learns which providers have one.
			s := service.New(keys.Keys{}, c.String("runs-dir"), log)
			// Keep serving whatever the keys file and the models file hold, so anetd can
			// show the reason; endpoints refuse to open with no_api_key, or with
			// models_file_invalid, until the file is fixed and reloaded. The models file
			// is read here and on each reload only: an edit changes no run until then (U3).
			s.LoadKeys(c.String("keys"))
			s.LoadModels(c.String("models"))
			if err := s.MakeRunsDir(); err != nil {
				return err
			}
			info := s.KeysInfo
			handlers := s.Handlers()
			handlers[egresswire.MethodSelfTest] = privsep.OneAtATime(egresswire.MethodSelfTest, egresswire.SelfTestTimeout, serveSelfTest)
			handlers[privsep.MethodStatus] = func(context.Context, *privsep.Request) (privsep.Reply, error) {
				st := info()
				st["pid"] = os.Getpid()
				st["endpoints_open"] = s.Count()
				return privsep.Reply{Body: st}, nil
			}
			err := privsep.ServeHelper(c.Context, "egress", handlers, info, log)
			// EOF of fd 3 or a signal: every endpoint closes with the helper, and with it every
			// tunnel and model request of every run.
			s.CloseAll()
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
}
