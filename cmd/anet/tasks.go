package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/limits"
)

// maxText is pkg/peer.MaxText (the CLI does not link the transport); anetd checks it too.
const maxText = limits.TaskTextBytes

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send a task to a peer; prints the interaction id (delivery is retried in the background)",
		ArgsUsage: "TEXT (or - to read it from standard input)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "the peer's `AID` (add it first with anet peer add)", Required: true},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: anet send --to AID TEXT")
			}
			text := c.Args().First()
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(os.Stdin, maxText+1))
				if err != nil {
					return fmt.Errorf("read the task from standard input: %w", err)
				}
				text = string(b)
			}
			if len(text) > maxText {
				return fmt.Errorf("text: more than the limit of %d bytes", maxText)
			}
			var it control.Interaction
			if err := call(c, "POST", "/v1/send", control.SendRequest{To: c.String("to"), Text: text}, &it); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(it)
			}
			fmt.Println(it.Interaction)
			return nil
		},
	}
}

func inboxCommand() *cli.Command {
	return &cli.Command{
		Name:  "inbox",
		Usage: "tasks received from peers",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.StringFlag{Name: "state", Usage: "only tasks in this state: new, answered or refused"},
		},
		Action: func(c *cli.Context) error {
			q := url.Values{}
			if s := c.String("state"); s != "" {
				q.Set("state", s)
			}
			var list []control.Interaction
			if err := call(c, "GET", "/v1/inbox?"+q.Encode(), nil, &list); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(list)
			}
			if len(list) == 0 {
				fmt.Println("inbox is empty")
				return nil
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "INTERACTION\tPEER\tTRUSTED\tSTATE\tRECEIVED\tTEXT")
			for _, it := range list {
				fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\n", it.Interaction, short(it.Peer), it.Trusted, it.State,
					it.CreatedAt.Local().Format("2006-01-02 15:04:05"), oneLine(it.Text, 60))
			}
			return w.Flush()
		},
	}
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show an interaction: the task and any reply or refusal, in either direction",
		ArgsUsage: "INTERACTION",
		Flags:     []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: anet show INTERACTION")
			}
			var list []control.Interaction
			if err := call(c, "GET", "/v1/interactions/"+url.PathEscape(c.Args().First()), nil, &list); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(list)
			}
			for i, it := range list {
				if i > 0 {
					fmt.Println()
				}
				printInteraction(it)
			}
			return nil
		},
	}
}

func printInteraction(it control.Interaction) {
	dir := "from"
	if it.Direction == "out" {
		dir = "to"
	}
	fmt.Printf("interaction %s (%s %s, trusted: %v)\n", it.Interaction, dir, it.Peer, it.Trusted)
	fmt.Printf("state: %s\n", it.State)
	fmt.Printf("task (%s):\n%s\n", it.SentAt.Local().Format(time.RFC3339), indent(it.Text))
	if a := it.Answer; a != nil {
		switch a.Type {
		case "reply":
			fmt.Printf("reply (%s):\n%s\n", a.At.Local().Format(time.RFC3339), indent(a.Text))
		case "refusal":
			line := fmt.Sprintf("refusal (%s): %s", a.At.Local().Format(time.RFC3339), a.Code)
			if !a.Until.IsZero() {
				line += ", until " + a.Until.Local().Format(time.RFC3339)
			}
			fmt.Println(line)
		}
	}
	for _, r := range it.Runs {
		fmt.Println(runLine(r))
	}
	for _, d := range it.Delivery {
		line := fmt.Sprintf("delivery of %s %s: %s after %d attempt(s)", d.Type, d.MsgID, d.State, d.Attempts)
		if d.LastError != "" {
			line += "; last error: " + d.LastError
		}
		fmt.Println(line)
	}
}

func replyCommand() *cli.Command {
	return &cli.Command{
		Name:      "reply",
		Usage:     "answer a task in the inbox by hand",
		ArgsUsage: "INTERACTION TEXT",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "peer", Usage: "the requester's aid, when two peers used the same interaction id"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("usage: anet reply INTERACTION TEXT")
			}
			var it control.Interaction
			req := control.ReplyRequest{Interaction: c.Args().Get(0), Peer: c.String("peer"), Text: c.Args().Get(1)}
			if err := call(c, "POST", "/v1/reply", req, &it); err != nil {
				return err
			}
			fmt.Printf("reply to %s queued for %s\n", it.Interaction, it.Peer)
			return nil
		},
	}
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// runLine shows one run of a received task with its tokens and cost (K1).
func runLine(r control.Run) string {
	counted := "not counted"
	if r.Counted {
		counted = "counted"
	}
	line := fmt.Sprintf("run %s (%s, %s, %s)", r.Run, r.Route, counted, r.At.Local().Format(time.RFC3339))
	if !r.Metered {
		return line + ": not metered (its model calls did not go through the node)"
	}
	t := r.Tokens
	line += fmt.Sprintf(": model %s; tokens %d input, %d output (%d reasoning), %d cache write, %d cache read; cost %s",
		r.Model, t.Input, t.Output, t.Reasoning, t.CacheWrite, t.CacheRead, r.Cost)
	if r.UsageMissing > 0 {
		line += fmt.Sprintf(" (%d response(s) without usage charged the estimate)", r.UsageMissing)
	}
	if r.SpendUnknown {
		line += " (usage unavailable: the whole allowance is counted)"
	}
	return line
}
