//go:build anettest && linux

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// metric is one line of the table.
type metric struct {
	What    string   `json:"what"`
	Unit    string   `json:"unit"`
	Ours    float64  `json:"ours"`
	Anchors []anchor `json:"anchors"`
	// Ratio compares ours with RatioTo ("" for an absolute aim), as Aim states it.
	RatioTo string  `json:"ratio_to,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Aim     string  `json:"aim"`
	Met     bool    `json:"met"`
	// Info marks a line that has no aim of its own (a floor shown for comparison).
	Info bool `json:"info,omitempty"`
}

type anchor struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"` // 0 with Missing
	// Missing says why the anchor was not measured (not installed, failed to start).
	Missing string `json:"missing,omitempty"`
}

type report struct {
	metrics []metric
	notes   []string // "# " lines under the table: what a number was measured under
}

func (r *report) add(m metric) { r.metrics = append(r.metrics, m) }

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "%-44s %-12s %-58s %-22s %-16s %s\n", "what", "ours", "anchors (same run)", "ratio", "aim", "met")
	for _, m := range r.metrics {
		var as []string
		for _, a := range m.Anchors {
			if a.Missing != "" {
				as = append(as, a.Name+" —")
			} else {
				as = append(as, a.Name+" "+num(a.Value)+" "+m.Unit)
			}
		}
		ratio := ""
		if m.RatioTo != "" {
			ratio = fmt.Sprintf("%.2f× %s", m.Ratio, m.RatioTo)
		}
		met := "no"
		switch {
		case m.Info:
			met = "—"
		case m.Met:
			met = "yes"
		}
		anchors := strings.Join(as, ", ")
		if anchors == "" {
			anchors = "—"
		}
		fmt.Fprintf(w, "%-44s %-12s %-58s %-22s %-16s %s\n", m.What, num(m.Ours)+" "+m.Unit, anchors, ratio, m.Aim, met)
	}
	for _, m := range r.metrics {
		for _, a := range m.Anchors {
			if a.Missing != "" {
				fmt.Fprintf(w, "# %s: %s not measured: %s\n", m.What, a.Name, a.Missing)
			}
		}
	}
	for _, n := range r.notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// pct returns the p-th percentile (0..1) of ds in milliseconds.
func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e6
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func value(as []anchor, name string) float64 {
	for _, a := range as {
		if a.Name == name && a.Missing == "" {
			return a.Value
		}
	}
	return 0
}
