package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/endpoint/selftest"
)

func init() { commands = append(commands, selfTestCommand()) }

func selfTestCommand() *cli.Command {
	return &cli.Command{
		Name:  "self-test",
		Usage: "attack a throw-away endpoint (fake upstream, test CA) with the rule, egress and limit batteries; non-zero if anything gets through",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON result per line"}},
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(c.Context, 2*time.Minute)
			defer cancel()
			results, err := selftest.Run(ctx)
			if err != nil {
				return fmt.Errorf("self-test: %w", err)
			}
			failed := 0
			enc := json.NewEncoder(os.Stdout)
			for _, r := range results {
				if !r.OK {
					failed++
				}
				if c.Bool("json") {
					enc.Encode(r)
					continue
				}
				mark := "ok  "
				if !r.OK {
					mark = "FAIL"
				}
				fmt.Printf("%s %-60s [%s] %s\n", mark, r.Name, r.Requirement, r.Detail)
			}
			if failed > 0 {
				return cli.Exit(fmt.Sprintf("anet-egress self-test: %d of %d checks failed", failed, len(results)), 1)
			}
			if !c.Bool("json") {
				fmt.Printf("all %d checks passed\n", len(results))
			}
			return nil
		},
	}
}
