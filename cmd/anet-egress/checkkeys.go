package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/keys"
	"anet.dev/anet/pkg/preflight"
)

func init() { commands = append(commands, checkKeysCommand()) }

// checkKeysCommand is how anetd (--check, start) and the CLI (config set, doctor) learn
// whether the keys file is usable without reading it: this process reads it with keys.Load,
// exactly as `serve` does, and answers with the verdict and the providers' names.
func checkKeysCommand() *cli.Command {
	return &cli.Command{
		Name:  "check-keys",
		Usage: "check the keys file as the node reads it (owner, mode, no symlink, content); prints no key",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "keys", Usage: "the keys `FILE`", Required: true},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON"},
		},
		Action: func(c *cli.Context) error {
			k, err := keys.Load(c.String("keys"))
			v := preflight.VerdictOf(k.Configured(), err)
			if c.Bool("json") {
				if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
					return err
				}
			} else if v.OK {
				fmt.Printf("keys file %s: keys for %v\n", c.String("keys"), v.Providers)
			}
			if !v.OK {
				if c.Bool("json") {
					return cli.Exit("", 1)
				}
				return v.Err()
			}
			return nil
		},
	}
}
