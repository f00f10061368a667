package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
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
				Name:  "export",
				Usage: "write the whole chain as JSON lines, each run's receipts inline",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "jsonl", Usage: "JSON Lines: one entry per line (the only format)"},
					&cli.StringFlag{Name: "out", Usage: "write to `FILE` (mode 0600, in place only once the export is whole) instead of standard output"},
				},
				Action: func(c *cli.Context) error {
					if !c.Bool("jsonl") || c.NArg() != 0 {
						return fmt.Errorf("usage: anet evidence export --jsonl [--out FILE]")
					}
					cl, err := dial()
					if err != nil {
						return err
					}
					if path := c.String("out"); path != "" {
						res, err := exportToFile(c.Context, cl, path)
						if err != nil {
							return err
						}
						fmt.Printf("exported %d entries, up to entry %d (head %s), to %s\n", res.Entries, res.HeadSeq, termsafe.Line(res.Head), termsafe.Line(path))
						return nil
					}
					w := bufio.NewWriter(os.Stdout)
					if _, err := exportJSONL(c.Context, cl, w); err != nil {
						w.Flush()
						return err
					}
					return w.Flush()
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

// exportJSONL writes the chain as anetd streams it (GET /v1/evidence/export), one entry per
// line, each run's receipts inline: the lines are control.ExportEntry. They are written as
// they arrive, escaped as --json is (U1): the exact text, and nothing a terminal acts on.
func exportJSONL(ctx context.Context, cl *control.Client, w io.Writer) (control.ExportResult, error) {
	var res control.ExportResult
	err := cl.DoStream(ctx, "GET", "/v1/evidence/export", nil, func(ev json.RawMessage) error {
		return termsafe.JSONLine(w, ev)
	}, &res)
	if err != nil {
		return res, fmt.Errorf("export evidence: %w", err)
	}
	return res, nil
}

// exportToFile writes the export to a new file beside path and renames it into place once it
// is whole and synced: path never holds a part of an export that failed.
func exportToFile(ctx context.Context, cl *control.Client, path string) (control.ExportResult, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return control.ExportResult{}, fmt.Errorf("export evidence: --out: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the rename there is nothing there to remove
	w := bufio.NewWriter(f)
	res, err := exportJSONL(ctx, cl, w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return res, fmt.Errorf("--out %s: %w", path, err)
	}
	return res, nil
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
