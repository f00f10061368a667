package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/termsafe"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the node: identity, helpers, keys configured, budget, warnings",
		Flags: []cli.Flag{jsonFlag},
		Action: func(c *cli.Context) error {
			var st control.Status
			if err := call(c, "GET", "/v1/status", nil, &st); err != nil {
				return err
			}
			if c.Bool("json") {
				return printJSON(st)
			}
			printStatus(os.Stdout, st)
			return nil
		},
	}
}

func printStatus(out io.Writer, st control.Status) {
	// Helper errors, warning details and run ids can quote an agent or a peer (U1).
	termsafe.Walk(&st, termsafe.Line)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "aid:\t%s\n", st.AID)
	fmt.Fprintf(w, "anetd:\t%s, pid %d, up %s\n", st.Version, st.PID, (time.Duration(st.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(w, "config:\t%s\n", st.ConfigPath)
	keyed := "none"
	if len(st.ProvidersKeyed) > 0 {
		keyed = strings.Join(st.ProvidersKeyed, ", ")
	}
	fmt.Fprintf(w, "keys for:\t%s\n", keyed)
	if st.Dashboard != "" {
		fmt.Fprintf(w, "dashboard:\thttp://%s/ (anet dashboard logs a browser in)\n", st.Dashboard)
	}
	printAutoReplyStatus(w, st.AutoReply, st.Budget)
	printWallStatus(w, st.Wall)
	w.Flush()
	fmt.Fprintln(out, "helpers:")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, h := range st.Helpers {
		line := fmt.Sprintf("  %s\t%s\tpid %d\trestarts %d", h.Name, helperState(h), h.PID, h.Restarts)
		if h.LastError != "" {
			line += "\tlast error: " + h.LastError
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
	if len(st.Warnings) == 0 {
		fmt.Fprintln(out, "warnings: none")
		return
	}
	fmt.Fprintln(out, "warnings:")
	for _, wn := range st.Warnings {
		line := fmt.Sprintf("  %s: %s", wn.Code, wn.Text)
		if d := reasons.Dedup(reasons.Code(wn.Code), wn.Detail); d != "" {
			line += " (" + d + ")"
		}
		fmt.Fprintln(out, line)
	}
}

// helperState is the state as people read it: an unresponsive helper says for how long (N2).
func helperState(h privsep.Status) string {
	if h.State == privsep.StateUnresponsive {
		return fmt.Sprintf("%s for %ds", h.State, h.UnresponsiveSeconds)
	}
	return string(h.State)
}

func printAutoReplyStatus(w io.Writer, ar control.AutoReplyStatus, b control.Budget) {
	if !ar.Compiled {
		fmt.Fprintf(w, "auto-reply:\tnot in this build\n")
		return
	}
	fmt.Fprintf(w, "auto-reply:\tbackend %s, agent %s; trusted %s, untrusted %s\n", ar.Backend, ar.Agent, ar.Trusted, ar.Untrusted)
	fmt.Fprintf(w, "runs:\t%d active; %d of %d untrusted runs used today (%d per peer), %d in flight, %d left; day ends %s\n",
		ar.RunsActive, b.RunsToday, b.RunsPerDay, b.RunsPerPeerPerDay, b.InFlight, b.Left, b.DayEnds.Local().Format("2006-01-02 15:04 MST"))
	for _, r := range ar.Active {
		fmt.Fprintf(w, "  run %s\t%s %s (%s) since %s\n", r.Run, r.Peer, r.Interaction, r.Route, r.Started.Local().Format("15:04:05"))
	}
	printSpend(w, b.Spend)
	sb := ar.Sandbox
	switch {
	case !sb.Probed:
		fmt.Fprintf(w, "sandbox:\tnot probed yet\n")
	case sb.OK:
		limits := sb.Limits
		if sb.Mechanism != "" {
			limits += " (" + sb.Mechanism + ")"
		}
		fmt.Fprintf(w, "sandbox:\tavailable, limits %s\n", limits)
	default:
		line := "unavailable: " + sb.Detail
		if t := reasons.Text(reasons.Code(sb.Code)); t != "" {
			line = "unavailable: " + sb.Code + ": " + t
			if d := reasons.Dedup(reasons.Code(sb.Code), sb.Detail); d != "" {
				line += " (" + d + ")"
			}
		}
		fmt.Fprintf(w, "sandbox:\t%s\n", line)
	}
	if sb.Tier != "" {
		fmt.Fprintf(w, "isolation:\t%s\n", sb.Tier)
	}
	for _, r := range ar.Reasons {
		fmt.Fprintf(w, "reason:\t%s x%d: %s\n", r.Code, r.Count, r.Text)
	}
}

// printSpend shows today's model spend of untrusted runs against the caps (K2), in the price
// list's currency.
func printSpend(w io.Writer, s control.SpendBudget) {
	fmt.Fprintf(w, "spend:\t%s of %s spent today by untrusted runs, %s in flight, %s left (%s per peer)\n",
		s.Spent, s.PerDay, s.InFlight, s.Left, s.PerPeerPerDay)
	for _, p := range s.Peers {
		fmt.Fprintf(w, "  peer %s\tspent %s, in flight %s, left %s\n", p.Peer, p.Spent, p.InFlight, p.Left)
	}
}

// printWallStatus is the last proof of the wall (S7): when, why, the tier and the verdict,
// with the items that failed.
func printWallStatus(w io.Writer, p *control.WallProof) {
	if p == nil {
		fmt.Fprintf(w, "wall:\tnot proved yet (anet doctor --prove proves it now)\n")
		return
	}
	line := fmt.Sprintf("%s %s (%s, tier %s)", wallVerdict(*p), p.At.Local().Format(time.DateTime+" MST"), p.Why, p.Tier)
	if !p.OK {
		failed := p.Failed
		if len(failed) > 3 {
			failed = append(failed[:3:3], fmt.Sprintf("and %d more", len(p.Failed)-3))
		}
		line += ": failed " + strings.Join(failed, ", ") + "; sandboxed turns are refused (wall_unproven)"
	}
	fmt.Fprintf(w, "wall:\t%s\n", line)
}
