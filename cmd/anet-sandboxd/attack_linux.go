package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/bwrap"
)

func init() { commands = append(commands, attackCommand(), selfTestCommand()) }

// attackCommand runs the battery from inside a sandbox (self-test and the tests start it).
// Attacks that must die (x32, int 0x80) re-execute it as `attack --child NAME`.
func attackCommand() *cli.Command {
	return &cli.Command{
		Name:      bwrap.AttackCommand,
		Hidden:    true,
		Usage:     "run the attack battery (inside a sandbox)",
		ArgsUsage: "NAME…|all",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "one JSON result per line"},
			&cli.StringFlag{Name: "child", Usage: "run one attack as a child that may die"},
		},
		Action: func(c *cli.Context) error {
			if name := c.String("child"); name != "" {
				return cli.Exit("", attack.ChildMain(name, os.Stdout))
			}
			env, err := attack.FromEnviron(os.Getenv)
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd attack: %v", err), 2)
			}
			names := c.Args().Slice()
			if len(names) == 0 || (len(names) == 1 && names[0] == "all") {
				names = attack.Names()
			}
			all := true
			enc := json.NewEncoder(os.Stdout)
			for _, n := range names {
				r := attack.Run(n, env)
				all = all && r.Blocked
				if c.Bool("json") {
					_ = enc.Encode(r)
				} else {
					printAttack(r)
				}
			}
			if !all {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

func printAttack(r attack.Result) {
	mark := "blocked"
	if !r.Blocked {
		mark = "OPEN   "
	}
	fmt.Printf("%s %-24s %-8s %-14s %s\n", mark, r.Name, r.Requirement, r.How, r.Detail)
}

func selfTestCommand() *cli.Command {
	return &cli.Command{
		Name:  "self-test",
		Usage: "probe the sandbox and run the attack battery against this host; non-zero if anything is not blocked",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"}},
		Action: func(c *cli.Context) error {
			closeInheritedFds()
			l, err := bwrap.New(bwrap.Config{Log: quietLogger()})
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd self-test: %v", err), 2)
			}
			res, err := l.SelfTest(c.Context, bwrap.SelfTestOptions{})
			if err != nil {
				return cli.Exit(fmt.Sprintf("anet-sandboxd self-test: %v", err), 2)
			}
			if c.Bool("json") {
				e := json.NewEncoder(os.Stdout)
				e.SetIndent("", "  ")
				_ = e.Encode(res)
			} else {
				printProbe(os.Stdout, res.Probe, false)
				for _, r := range res.Attacks {
					printAttack(r)
				}
				if res.Detail != "" {
					fmt.Println("battery:", res.Detail)
				}
				if res.OK {
					fmt.Println("self-test: passed")
				} else {
					fmt.Println("self-test: FAILED")
				}
			}
			if !res.OK {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
