package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/preflight"
)

// configPath is the config file: --config (which must exist), or the default path.
func configPath(c *cli.Context) (string, error) {
	if p := c.String("config"); p != "" {
		return p, config.RequireFile(p)
	}
	p, err := config.DefaultPaths(os.Getenv)
	if err != nil {
		return "", err
	}
	return p.ConfigFile, nil
}

// loadConfig reads the operator's config file (--config or the default path) under the
// rules anetd reads it with (config.LoadFile).
func loadConfig(c *cli.Context) (string, config.Config, error) {
	path, err := configPath(c)
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := config.LoadFile(path, c.String("config") != "")
	return path, cfg, err
}

// setKey sets one key of the config file under the rules anetd applies to the result: the
// file's own rules and the whole document's validation (config.SetWith), the work roots,
// the allow-list confirmation when egress_allow changes (H1), and the keys-file verdict of
// anet-egress when keys_file changes.
func setKey(c *cli.Context, key, value string) error {
	path, err := configPath(c)
	if err != nil {
		return err
	}
	if key == "auto_reply.egress_allow" {
		// The hosts allowed now: a file that does not load (yet) allows none, so every
		// host counts as added and needs the confirmation. SetWith applies the file's
		// rules whatever happens here.
		cfg, err := config.Load(path)
		if err != nil {
			cfg = config.Default()
		}
		if err := confirmEgress(cfg, value, os.Stdin, os.Stderr, isTerminal(os.Stdin), c.Bool("yes")); err != nil {
			return err
		}
	}
	paths, err := config.DefaultPaths(os.Getenv)
	if err != nil {
		return err
	}
	paths.ConfigFile = path
	check := func(next config.Config) error {
		if err := paths.WithConfig(next).CheckWorkRoots(next); err != nil {
			return err
		}
		if key == "keys_file" {
			return preflight.Keys(c.Context, "", paths.WithConfig(next).KeysFile)
		}
		return nil
	}
	if err := config.SetWith(path, key, value, check); err != nil {
		return err
	}
	return applyToRunning(c, key, value, path)
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show, get or set configuration keys (the file is edited in place, comments kept)",
		Subcommands: []*cli.Command{
			{
				Name:  "show",
				Usage: "print the effective configuration with defaults",
				Action: func(c *cli.Context) error {
					path, cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					out, err := config.Show(cfg)
					if err != nil {
						return err
					}
					fmt.Printf("# %s\n%s", path, out)
					return nil
				},
			},
			{
				Name:      "get",
				Usage:     "print one key (dotted path, e.g. auto_reply.sandbox.runs_per_day)",
				ArgsUsage: "KEY",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: anet config get KEY")
					}
					_, cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					v, err := config.Get(cfg, c.Args().First())
					if err != nil {
						return err
					}
					fmt.Println(v)
					return nil
				},
			},
			{
				Name:      "set",
				Usage:     "set one key; the whole file is validated before it is written",
				ArgsUsage: "KEY VALUE",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "yes", Usage: "adding auto_reply.egress_allow hosts at a terminal: do not ask (a terminal is still needed)"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return fmt.Errorf("usage: anet config set KEY VALUE")
					}
					return setKey(c, c.Args().Get(0), c.Args().Get(1))
				},
			},
		},
	}
}
