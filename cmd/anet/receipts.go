package main

import (
	"fmt"
	"strings"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/termsafe"
)

// receiptPrefix starts every receipt line of `anet show`, under its run's line.
const receiptPrefix = "  "

// receiptLines are a run's receipts as `anet show` lists them under the run (H1–H7, R1, K1):
// a summary, then one line per tunnel and per model request. Hosts, server names, paths and
// model names are the agent's choice and every other field came over the wire: all of it goes
// through termsafe (U1).
func receiptLines(r control.Run) []string {
	l := termsafe.Line
	var out []string
	if c := r.ReceiptCounts; c != nil {
		line := fmt.Sprintf("%sreceipts %s: %d tunnel(s), %d model request(s), %d refused", receiptPrefix, l(shortDigest(c.Digest)), c.Tunnels, c.Model, c.Refused)
		if c.Dropped > 0 {
			line += fmt.Sprintf(", %d more not kept", c.Dropped)
		}
		out = append(out, line)
	}
	if r.ReceiptsError != "" {
		out = append(out, receiptPrefix+"receipts not shown: "+l(r.ReceiptsError))
	}
	s := r.Receipts
	if s == nil {
		return out
	}
	for _, t := range s.Tunnels {
		out = append(out, receiptPrefix+tunnelLine(t))
	}
	for _, m := range s.Model {
		out = append(out, receiptPrefix+modelLine(m))
	}
	if s.DroppedTunnels > 0 || s.DroppedModel > 0 {
		out = append(out, fmt.Sprintf("%s(%d more tunnel(s) and %d more model request(s) were counted but not kept)", receiptPrefix, s.DroppedTunnels, s.DroppedModel))
	}
	return out
}

// tunnelLine: "tunnel HOST:PORT → DIALLED, sni SNI, SENT B ↑ RECEIVED B ↓, DURATION, END[: CODE (RULE)]".
func tunnelLine(t receipt.Tunnel) string {
	l := termsafe.Line
	return fmt.Sprintf("tunnel %s:%d → %s, sni %s, %d B ↑ %d B ↓, %s, %s",
		l(t.Host), t.Port, l(orDash(t.Dialled)), l(orDash(t.SNI)), t.Sent, t.Received, span(t.Opened, t.Ended), endText(t.End, string(t.Code), t.Rule))
}

// modelLine: "model METHOD PATH → STATUS, model MODEL, tokens IN in / OUT out, cost COST, END[: CODE (RULE)]".
func modelLine(m receipt.Model) string {
	l := termsafe.Line
	return fmt.Sprintf("model %s %s → %d, model %s, tokens %d in / %d out, cost %s, %s, %s",
		l(m.Method), l(m.Path), m.Status, l(orDash(m.Model)), m.TokensIn, m.TokensOut, m.Cost, span(m.Started, m.Ended), endText(m.End, string(m.Code), m.Rule))
}

func endText(end receipt.End, code, rule string) string {
	l := termsafe.Line
	s := l(string(end))
	if code != "" {
		s += ": " + l(code)
		if rule != "" {
			s += " (" + l(rule) + ")"
		}
	}
	return s
}

func span(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return "-"
	}
	d := to.Sub(from)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortDigest keeps "sha256:" and 12 hex digits: enough to tell sets apart on screen; the
// whole digest is in --json and in the chain.
func shortDigest(d string) string {
	if hexPart, ok := strings.CutPrefix(d, "sha256:"); ok && len(hexPart) > 12 {
		return "sha256:" + hexPart[:12] + "…"
	}
	return d
}
