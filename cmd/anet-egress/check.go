package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/endpoint"
	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/preflight"
)

func init() { commands = append(commands, checkCommand()) }

// checkCommand is how anetd (--check, start) and the CLI (config set, doctor) learn whether
// the keys file and the models file are usable without reading them, and whether a run of
// the configured agent could open its endpoint: this process reads the files with keys.Load
// and rules.LoadCatalog and decides the run with endpoint.Check, exactly as `serve`
// does, and answers with the verdicts and the providers' names, never a key.
func checkCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "check the keys file as the node reads it (owner, mode, no symlink, content), the models file with --models and, with --agent, a run's upstream, key and model; prints no key",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keys", Usage: "the keys `FILE`", Required: true},
			&cli.StringFlag{Name: "models", Usage: "models override `FILE` merged over the built-in list"},
			&cli.StringFlag{Name: "agent", Usage: "also check a run of `AGENT` (its upstream, key and pinned model)"},
			&cli.StringFlag{Name: "api-base", Usage: "the run's api_base `URL`"},
			&cli.StringFlag{Name: "model", Usage: "the run's configured `MODEL` (\"\" is the cheapest)"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdicts as JSON"},
		},
		Action: func(c *cli.Context) error {
			k, err := keys.Load(c.String("keys"))
			a := preflight.CheckAnswer{Keys: preflight.VerdictOf(k.Configured(), err)}
			// Loaded once, as serve loads it, and used for the run's check.
			cat, catErr := rules.LoadCatalog(c.String("models"))
			if c.String("models") != "" {
				v := preflight.ModelsVerdictOf(catErr)
				a.Models = &v
			}
			if agent := c.String("agent"); agent != "" {
				p := endpoint.Policy{RunID: "check", Agent: agent, APIBase: c.String("api-base"), Model: c.String("model")}
				var v preflight.RunVerdict
				if catErr != nil {
					v = preflight.RunVerdictOf("", catErr)
				} else {
					v = preflight.RunVerdictOf(endpoint.Check(p, k, cat))
				}
				a.Run = &v
			}
			ok := a.OK()
			if c.Bool("json") {
				if err := json.NewEncoder(os.Stdout).Encode(a); err != nil {
					return err
				}
				if !ok {
					return cli.Exit("", 1)
				}
				return nil
			}
			if !a.Keys.OK {
				return a.Keys.Err()
			}
			if a.Models != nil && !a.Models.OK {
				return a.Models.Err()
			}
			fmt.Printf("keys file %s: keys for %v\n", c.String("keys"), a.Keys.Providers)
			if a.Models != nil {
				fmt.Printf("models file %s: accepted\n", c.String("models"))
			}
			if a.Run != nil {
				if !a.Run.OK {
					return fmt.Errorf("a run of %s: %s: %s", c.String("agent"), a.Run.Code, a.Run.Message)
				}
				fmt.Printf("a run of %s is pinned to %s\n", c.String("agent"), a.Run.Model)
			}
			return nil
		},
	}
}
