package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/config"
)

func configPath(c *cli.Context) (string, error) {
	if p := c.String("config"); p != "" {
		return p, nil
	}
	p, err := config.DefaultPaths(os.Getenv)
	if err != nil {
		return "", err
	}
	return p.ConfigFile, nil
}

// loadConfig reads the operator's config file (--config or the default path).
func loadConfig(c *cli.Context) (string, config.Config, error) {
	path, err := configPath(c)
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := config.Load(path)
	return path, cfg, err
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
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return fmt.Errorf("usage: anet config set KEY VALUE")
					}
					path, err := configPath(c)
					if err != nil {
						return err
					}
					if err := config.Set(path, c.Args().Get(0), c.Args().Get(1)); err != nil {
						return err
					}
					fmt.Printf("%s = %s written to %s; restart anetd to apply\n", c.Args().Get(0), c.Args().Get(1), path)
					return nil
				},
			},
		},
	}
}
