//go:build !noautoreply

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/termsafe"
)

// autoReplyKeys are the keys `anet autoreply set` takes, relative to auto_reply.
var autoReplyKeys = []string{
	"backend", "agent", "trusted", "untrusted", "model", "api_base", "api_timeout_seconds",
	"work_dir", "work_retention", "egress_allow",
	"sandbox.runs_per_day", "sandbox.runs_per_peer_per_day", "sandbox.spend_per_day", "sandbox.spend_per_peer_per_day",
	"sandbox.memory_max", "sandbox.tasks_max", "sandbox.disk_max",
}

func autoReplyCommand() *cli.Command {
	return &cli.Command{
		Name:  "autoreply",
		Usage: "test, show or set the auto-reply policy (the auto_reply section of the config)",
		Subcommands: []*cli.Command{
			{
				Name:  "test",
				Usage: "run a fixed task through the configured path and report each stage (never counted)",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					var rep control.AutoReplyTest
					if err := call(c, "POST", "/v1/autoreply/test", struct{}{}, &rep); err != nil {
						return cannotRun(err)
					}
					var err error
					if c.Bool("json") {
						err = printJSON(rep)
					} else {
						err = printAutoReplyTest(os.Stdout, rep)
					}
					if err != nil {
						return err
					}
					return cli.Exit("", rep.ExitCode())
				},
			},
			{
				Name:  "show",
				Usage: "print the auto_reply section with every default filled in",
				Action: func(c *cli.Context) error {
					path, cfg, err := loadConfig(c)
					if err != nil {
						return err
					}
					out, err := config.Get(cfg, "auto_reply")
					if err != nil {
						return err
					}
					fmt.Printf("# %s\nauto_reply:\n", path)
					for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
						fmt.Println("  " + line)
					}
					return nil
				},
			},
			{
				Name:      "set",
				Usage:     "set one auto_reply key (KEY VALUE, e.g. sandbox.runs_per_day 10), or --egress-allow HOSTS",
				ArgsUsage: "KEY VALUE",
				Description: "Keys: " + strings.Join(autoReplyKeys, ", ") + ".\n" +
					"--egress-allow a,b replaces the allowed hosts; \"\" removes all. Adding a host needs\n" +
					"confirmation at a terminal (H1); removing does not. A running anetd applies it at once.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "egress-allow", Usage: "comma-separated `HOSTS` a sandboxed run may reach through CONNECT (\"\" for none)"},
					&cli.BoolFlag{Name: "yes", Usage: "with --egress-allow at a terminal: do not ask (adding hosts still needs a terminal)"},
				},
				Action: autoReplySet,
			},
		},
	}
}

func autoReplySet(c *cli.Context) error {
	var key, value string
	switch {
	case c.IsSet("egress-allow") && c.NArg() == 0:
		key, value = "egress_allow", c.String("egress-allow")
	case c.IsSet("egress-allow"):
		return fmt.Errorf("usage: anet autoreply set --egress-allow HOSTS (no KEY VALUE with it)")
	case c.NArg() == 2:
		key, value = c.Args().Get(0), c.Args().Get(1)
		key = strings.TrimPrefix(key, "auto_reply.")
		if key == "egress_allow" {
			return fmt.Errorf("use `anet autoreply set --egress-allow HOSTS` for the allowed hosts (adding needs confirmation)")
		}
		if !knownAutoReplyKey(key) {
			return fmt.Errorf("unknown key %q (known: %s)", key, strings.Join(autoReplyKeys, ", "))
		}
	default:
		return fmt.Errorf("usage: anet autoreply set KEY VALUE, or anet autoreply set --egress-allow HOSTS")
	}
	return setKey(c, "auto_reply."+key, value)
}

func knownAutoReplyKey(k string) bool {
	for _, x := range autoReplyKeys {
		if x == k {
			return true
		}
	}
	return false
}

func printAutoReplyTest(w io.Writer, rep control.AutoReplyTest) error {
	// Check details quote the agent's stderr; the answer is the agent's (U1).
	answer := rep.Answer
	termsafe.Walk(&rep, termsafe.Line)
	who := "untrusted"
	if rep.Trusted {
		who = "trusted"
	}
	fmt.Fprintf(w, "auto-reply test (%s peers, route %s; not counted)\n", who, rep.Route)
	var notes []string
	if answer != "" {
		notes = append(notes, "answer:\n"+termsafe.Block(answer, textPrefix))
	}
	return rep.WriteText(w, notes...)
}
