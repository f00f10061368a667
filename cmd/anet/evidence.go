package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/termsafe"
)

func evidenceCommand() *cli.Command {
	return &cli.Command{
		Name:  "evidence",
		Usage: "the node's signed, hash-linked evidence chain",
		Subcommands: []*cli.Command{
			{
				Name:  "verify",
				Usage: "check every link and signature; names the first bad entry",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					var v control.VerifyAnswer
					if err := call(c, "POST", "/v1/evidence/verify", nil, &v); err != nil {
						return err
					}
					if c.Bool("json") {
						if err := printJSON(v); err != nil {
							return err
						}
					} else if v.OK {
						fmt.Printf("evidence chain verified: %d entries, head %s\n", v.Entries, termsafe.Line(v.Head))
					}
					if !v.OK {
						return fmt.Errorf("evidence chain is broken at entry %d: %s", v.BadSeq, termsafe.Line(v.Error))
					}
					return nil
				},
			},
			{
				Name:  "show",
				Usage: "list entries",
				Flags: []cli.Flag{
					jsonFlag,
					&cli.StringFlag{Name: "since", Usage: "RFC 3339 time, date (2006-01-02) or duration back from now (2h)"},
					&cli.StringFlag{Name: "kind", Usage: "only entries of this kind"},
					&cli.StringFlag{Name: "peer", Usage: "only entries about this peer (aid)"},
					&cli.IntFlag{Name: "limit", Usage: "at most this many entries"},
				},
				Action: func(c *cli.Context) error {
					q := url.Values{}
					for _, k := range []string{"since", "kind", "peer"} {
						if v := c.String(k); v != "" {
							q.Set(k, v)
						}
					}
					if l := c.Int("limit"); l > 0 {
						q.Set("limit", strconv.Itoa(l))
					}
					var entries []control.EvidenceEntry
					if err := call(c, "GET", "/v1/evidence?"+q.Encode(), nil, &entries); err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(entries)
					}
					return printEvidence(os.Stdout, entries)
				},
			},
			{
				Name:      "note",
				Usage:     "record an operator note in the chain",
				ArgsUsage: "TEXT",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: anet evidence note TEXT")
					}
					var e control.EvidenceEntry
					if err := call(c, "POST", "/v1/evidence/note", map[string]string{"text": c.Args().First()}, &e); err != nil {
						return err
					}
					fmt.Printf("recorded as entry %d\n", e.Seq)
					return nil
				},
			},
		},
	}
}

// printEvidence lists chain entries. A peer's aid and interaction id and the details (which
// quote peers' and agents' words) are rendered by termsafe (U1).
func printEvidence(out io.Writer, entries []control.EvidenceEntry) error {
	l := termsafe.Line
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SEQ\tTIME\tKIND\tPEER\tINTERACTION\tDETAILS")
	for _, e := range entries {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.Local().Format("2006-01-02 15:04:05"), l(e.Kind), l(short(e.Peer)), l(e.Interaction), l(strings.TrimSpace(string(e.Details))))
	}
	return w.Flush()
}

func short(aid string) string {
	if len(aid) > 14 {
		return aid[:14] + "…"
	}
	if aid == "" {
		return "-"
	}
	return aid
}
