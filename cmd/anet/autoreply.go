//go:build !noautoreply

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/termsafe"
)

// autoReplyKeys are the keys `anet autoreply set` takes, relative to auto_reply.
var autoReplyKeys = []string{
	"backend", "agent", "trusted", "untrusted", "model", "api_base", "agent_runtime", "api_timeout_seconds",
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
					cl, err := dial()
					if err != nil {
						return cannotRun(err)
					}
					var rep control.AutoReplyTest
					var lw *check.LineWriter
					if !c.Bool("json") {
						fmt.Println("auto-reply test (not counted)")
						lw = check.NewLineWriter(os.Stdout, stageWidth)
					}
					// Each stage is printed as it happens (S8); --json prints the report.
					onEvent := func(raw json.RawMessage) error {
						if lw == nil {
							return nil
						}
						var ev control.AutoReplyEvent
						if err := json.Unmarshal(raw, &ev); err != nil {
							return err
						}
						return printTestEvent(os.Stdout, lw, ev)
					}
					if err := cl.DoStream(c.Context, "POST", "/v1/autoreply/test/stream", struct{}{}, onEvent, &rep); err != nil {
						return cannotRun(err)
					}
					if c.Bool("json") {
						err = printJSON(rep)
					} else {
						err = printAutoReplyResult(lw, rep)
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

// stageWidth is the width of the longest stage name of the test (agent_config).
const stageWidth = 12

// printAutoReplyTest prints a whole report: its stages, then its result.
func printAutoReplyTest(w io.Writer, rep control.AutoReplyTest) error {
	lw := check.NewLineWriter(w, stageWidth)
	for _, c := range rep.Checks {
		if err := printTestEvent(w, lw, control.AutoReplyEvent{Check: c}); err != nil {
			return err
		}
	}
	return printAutoReplyResult(lw, rep)
}

// printTestEvent prints one stage, or one progress line of a running stage, as it happens.
// The detail quotes the agent or the model service (U1).
func printTestEvent(w io.Writer, lw *check.LineWriter, ev control.AutoReplyEvent) error {
	termsafe.Walk(&ev, termsafe.Line)
	if ev.Progress {
		_, err := fmt.Fprintf(w, "...  %-*s %s\n", stageWidth, ev.Name, ev.Detail)
		return err
	}
	return lw.Check(ev.Check)
}

// printAutoReplyResult prints how the test ended: which path, the answer, the run's log, and
// the result line.
func printAutoReplyResult(lw *check.LineWriter, rep control.AutoReplyTest) error {
	who := "untrusted"
	if rep.Trusted {
		who = "trusted"
	}
	notes := []string{fmt.Sprintf("tested the path of %s peers: route %s", who, termsafe.Line(rep.Route))}
	if rep.Answer != "" {
		// The answer is the agent's (U1).
		notes = append(notes, "answer:\n"+termsafe.Block(rep.Answer, textPrefix))
	}
	if !rep.OK && rep.RunLog != "" {
		notes = append(notes, "the run's log: "+termsafe.Line(rep.RunLog))
	}
	return lw.Result(rep.Report, notes...)
}
