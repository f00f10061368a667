package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/sandbox/attack"
)

func init() { commands = append(commands, attackCommand()) }

// attackCommand runs the battery from inside a sandbox (self-test and the tests start it).
// Attacks that must die (x32, int 0x80) re-execute it as `attack --child NAME`.
func attackCommand() *cli.Command {
	return &cli.Command{
		Name:      attack.Command,
		Hidden:    true,
		Usage:     "run the attack battery (inside a sandbox)",
		ArgsUsage: "NAME…|all",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the results as one JSON object"},
			&cli.StringFlag{Name: "child", Usage: "run one attack as a child that may die"},
		},
		Action: func(c *cli.Context) error {
			if name := c.String("child"); name != "" {
				return cli.Exit("", attack.ChildMain(name, os.Stdout))
			}
			env, err := attack.FromEnviron(os.Getenv)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd attack: %v", err), check.ExitCannotRun)
			}
			names := c.Args().Slice()
			if len(names) == 0 || (len(names) == 1 && names[0] == "all") {
				names = attack.Names()
			}
			var rep check.Report
			for _, n := range names {
				rep.Add(attack.Run(n, env).Check())
			}
			if c.Bool("json") {
				err = check.WriteJSON(os.Stdout, rep)
			} else {
				err = rep.WriteText(os.Stdout)
			}
			if err != nil {
				return err
			}
			return cli.Exit("", rep.ExitCode())
		},
	}
}
