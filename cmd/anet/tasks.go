package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/termsafe"
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
			if err := checkUTF8(text); err != nil {
				return err
			}
			var it control.Interaction
			if err := call(c, "POST", "/v1/send", control.SendRequest{To: c.String("to"), Text: text}, &it); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(it)
			}
			fmt.Println(termsafe.Line(it.Interaction))
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
			return printInbox(os.Stdout, list)
		},
	}
}

func showCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show an interaction: the task and any reply or refusal, in either direction",
		ArgsUsage: "INTERACTION",
		Flags: []cli.Flag{
			jsonFlag,
			&cli.StringFlag{Name: "peer", Usage: "the peer's `AID`, when two peers used the same interaction id"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("usage: anet show INTERACTION")
			}
			var list []control.Interaction
			if err := call(c, "GET", "/v1/interactions/"+url.PathEscape(c.Args().First()), nil, &list); err != nil {
				return err
			}
			it, err := pickInteraction(list, c.Args().First(), c.String("peer"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(it)
			}
			printInteraction(os.Stdout, it)
			return nil
		},
	}
}

// pickInteraction chooses the one interaction `anet show` prints. Interaction ids are chosen
// by the task's sender, so two peers (or a peer and this node) can use the same one; then
// --peer names which.
func pickInteraction(list []control.Interaction, id, peerAID string) (control.Interaction, error) {
	var match []control.Interaction
	for _, it := range list {
		if peerAID == "" || it.Peer == peerAID {
			match = append(match, it)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0 && peerAID != "":
		return control.Interaction{}, reasons.New(reasons.UnknownInteraction, fmt.Sprintf("interaction %s with peer %s", id, peerAID))
	case len(match) == 0:
		return control.Interaction{}, reasons.New(reasons.UnknownInteraction, "interaction "+id)
	}
	peers := make([]string, len(match))
	for i, it := range match {
		peers[i] = it.Peer
	}
	return control.Interaction{}, fmt.Errorf("interaction %s was used by %d peers (%s); name one with --peer", id, len(match), strings.Join(peers, ", "))
}

// printInbox lists tasks; every field a peer chose is rendered by termsafe (U1), the text
// on one line.
func printInbox(out io.Writer, list []control.Interaction) error {
	if len(list) == 0 {
		fmt.Fprintln(out, "inbox is empty")
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "INTERACTION\tPEER\tTRUSTED\tSTATE\tRECEIVED\tTEXT")
	for _, it := range list {
		state := it.State
		if a := it.Answer; a != nil && a.Reason != "" {
			state += " (" + a.Reason + ")" // why this node refused it: `anet show` says the fix
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\n", termsafe.Line(it.Interaction), termsafe.Line(short(it.Peer)), it.Trusted, termsafe.Line(state),
			it.CreatedAt.Local().Format("2006-01-02 15:04:05"), termsafe.Line(oneLine(it.Text, 60)))
	}
	return w.Flush()
}

// textPrefix starts every line of a task's or a reply's text in `anet show`: no line a peer
// or an agent wrote can look like one of the lines around it (U1).
const textPrefix = "  | "

// printInteraction shows one interaction. Everything but the CLI's own words and times came
// from a peer, an agent or the chain, and goes through termsafe (U1).
func printInteraction(w io.Writer, it control.Interaction) {
	l := termsafe.Line
	dir := "from"
	if it.Direction == "out" {
		dir = "to"
	}
	fmt.Fprintf(w, "interaction %s (%s %s, trusted: %v)\n", l(it.Interaction), dir, l(it.Peer), it.Trusted)
	fmt.Fprintf(w, "state: %s\n", l(it.State))
	fmt.Fprintf(w, "task (%s):\n%s\n", it.SentAt.Local().Format(time.RFC3339), termsafe.Block(it.Text, textPrefix))
	if a := it.Answer; a != nil {
		switch a.Type {
		case "reply":
			fmt.Fprintf(w, "reply (%s):\n%s\n", a.At.Local().Format(time.RFC3339), termsafe.Block(a.Text, textPrefix))
		case "refusal":
			line := fmt.Sprintf("refusal (%s): %s", a.At.Local().Format(time.RFC3339), l(a.Code))
			if !a.Until.IsZero() {
				line += ", until " + a.Until.Local().Format(time.RFC3339)
			}
			fmt.Fprintln(w, line)
			if a.Reason != "" {
				// This node's own reason, and what fixes it (F2); the requester was not told it.
				fmt.Fprintf(w, "reason: %s: %s\n", l(a.Reason), l(reasons.Text(reasons.Code(a.Reason))))
				if d := reasons.Dedup(reasons.Code(a.Reason), a.Detail); d != "" {
					fmt.Fprintf(w, "detail: %s\n", l(d))
				}
			}
		}
	}
	for _, r := range it.Runs {
		fmt.Fprintln(w, runLine(r))
		for _, line := range receiptLines(r) {
			fmt.Fprintln(w, line)
		}
	}
	for _, d := range it.Delivery {
		line := fmt.Sprintf("delivery of %s %s: %s after %d attempt(s)", l(d.Type), l(d.MsgID), l(d.State), d.Attempts)
		if d.LastError != "" {
			line += "; last error: " + l(d.LastError)
		}
		fmt.Fprintln(w, line)
	}
	for _, rl := range it.RunLogs {
		fmt.Fprintf(w, "log of run %s:\n%s\n", l(rl.Run), termsafe.Block(strings.TrimRight(rl.Text, "\n"), textPrefix))
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
			if err := checkUTF8(c.Args().Get(1)); err != nil {
				return err
			}
			var it control.Interaction
			req := control.ReplyRequest{Interaction: c.Args().Get(0), Peer: c.String("peer"), Text: c.Args().Get(1)}
			if err := call(c, "POST", "/v1/reply", req, &it); err != nil {
				return err
			}
			fmt.Printf("reply to %s queued for %s\n", termsafe.Line(it.Interaction), termsafe.Line(it.Peer))
			return nil
		},
	}
}

// checkUTF8 refuses text that is not UTF-8 before it is sent: the JSON encoding on the way to
// anetd would silently replace the bad bytes, and the peer protocol carries UTF-8 only.
func checkUTF8(text string) error {
	if utf8.ValidString(text) {
		return nil
	}
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("text: byte %d (0x%02x) is not valid UTF-8; convert the text to UTF-8 (e.g. iconv -t UTF-8)", i, text[i])
		}
		i += n
	}
	return nil
}

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
	l := termsafe.Line
	line := fmt.Sprintf("run %s (%s, %s, %s)", l(r.Run), l(r.Route), counted, r.At.Local().Format(time.RFC3339))
	if !r.Metered {
		return line + ": not metered (its model calls did not go through the node)"
	}
	t := r.Tokens
	line += fmt.Sprintf(": model %s; tokens %d input, %d output (%d reasoning), %d cache write, %d cache read; cost %s",
		l(r.Model), t.Input, t.Output, t.Reasoning, t.CacheWrite, t.CacheRead, r.Cost)
	if r.UsageMissing > 0 {
		line += fmt.Sprintf(" (%d response(s) without usage charged the estimate)", r.UsageMissing)
	}
	if r.SpendUnknown {
		line += " (usage unavailable: the whole allowance is counted)"
	}
	return line
}
