// Package check is the one shape of "a check and its outcome" that every diagnostic of the
// node reports in: the sandbox probe (`anet-sandboxd probe`), `anet-sandboxd self-test`,
// `anet-egress self-test`, `anet doctor` and `anet autoreply test`.
//
// The JSON form (`--json`) is one object, never JSON lines:
//
//	{"ok": false, "checks": [
//	  {"name": "bubblewrap", "requirement": "L1", "ok": false, "code": "no_bwrap",
//	   "detail": "bwrap is not on PATH", "fix": "sudo apt-get install bubblewrap"}]}
//
// Every check carries all six fields (empty strings when a field does not apply), so a script
// can read them without testing for presence. `ok` at the top is true only when there is at
// least one check and every check is ok. A command may add fields of its own beside ok and
// checks (the probe's "limits", autoreply test's "answer"); a reader that knows only this
// shape reads ok and checks. Where a report joins several groups of checks, names are
// prefixed with the group and a dot ("probe.loopback", "attack.host_tcp").
//
// The text form (WriteText, or LineWriter as checks happen) is one line per check ("ok  ",
// "warn" for a pass with a code, or "FAIL", the name, the requirement, the code with its
// sentence the first time the code appears, the detail), a "fix:" line under a failed or
// degraded check that has one, the command's own notes, and a last line "result: ok (N
// checks)" or "result: failed (K of N checks)".
//
// Exit codes are the same for every command: ExitOK (0) when every check passed, ExitFailed
// (1) when a check failed, ExitCannotRun (2) when the checks could not be run at all (bad
// usage, a set-up failure); see Report.ExitCode.
package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"anet.dev/anet/pkg/reasons"
)

// Check is one property that was checked, with its outcome.
type Check struct {
	// Name identifies the check within its report; stable across runs.
	Name string `json:"name"`
	// Requirement is the requirement id(s) the check proves ("S7", "S2,S7"), or "".
	Requirement string `json:"requirement"`
	OK          bool   `json:"ok"`
	// Code is the reason code from pkg/reasons that explains a failure (or a degraded pass,
	// e.g. no_cgroup_limits), or "".
	Code reasons.Code `json:"code"`
	// Detail says what was seen, for a person (never a secret).
	Detail string `json:"detail"`
	// Fix is the command or step that repairs a failure, or "".
	Fix string `json:"fix"`
}

// Pass returns a passing check.
func Pass(name, requirement, detail string) Check {
	return Check{Name: name, Requirement: requirement, OK: true, Detail: detail}
}

// Fail returns a failing check with its reason code (may be "").
func Fail(name, requirement string, code reasons.Code, detail string) Check {
	return Check{Name: name, Requirement: requirement, Code: code, Detail: detail}
}

// Report is a list of checks and their verdict.
type Report struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Exit codes shared by every command that reports checks.
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitCannotRun = 2
)

// New returns a report of checks with OK computed (see AllOK).
func New(checks ...Check) Report {
	r := Report{Checks: append([]Check{}, checks...)}
	r.OK = AllOK(r.Checks)
	return r
}

// Add appends checks and recomputes OK.
func (r *Report) Add(checks ...Check) {
	r.Checks = append(r.Checks, checks...)
	r.OK = AllOK(r.Checks)
}

// AllOK reports whether there is at least one check and every check passed: an empty list
// proves nothing and is not a pass.
func AllOK(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return len(checks) > 0
}

// Failed counts the failed checks.
func (r Report) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

// ExitCode is ExitOK when the report passed and ExitFailed otherwise. ExitCannotRun is the
// caller's, for checks that could not run at all (there is no report then).
func (r Report) ExitCode() int {
	if r.OK && AllOK(r.Checks) {
		return ExitOK
	}
	return ExitFailed
}

// Prefixed returns checks with group+"." put before each name (reports that join groups).
func Prefixed(group string, checks []Check) []Check {
	out := make([]Check, len(checks))
	for i, c := range checks {
		c.Name = group + "." + c.Name
		out[i] = c
	}
	return out
}

// WriteJSON writes v (a Report, or a command's document that embeds one) as one indented
// JSON object.
func WriteJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// WriteText writes the report in the shared text form. Notes are lines of the command's own
// (the probe's limits, a test's answer), written after the checks and before the result.
func (r Report) WriteText(w io.Writer, notes ...string) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	lw := NewLineWriter(w, width)
	for _, c := range r.Checks {
		if err := lw.Check(c); err != nil {
			return err
		}
	}
	return lw.Result(r, notes...)
}

// LineWriter writes checks one at a time in the text form, as they happen (WriteText is one
// LineWriter over a whole report). A reason code's sentence is written the first time the code
// appears; a later check with the same code names the code and refers back to it, so that
// each reason is said once.
type LineWriter struct {
	w     io.Writer
	width int
	said  map[reasons.Code]string // code → the check that said it first
}

// NewLineWriter returns a LineWriter that pads names to width.
func NewLineWriter(w io.Writer, width int) *LineWriter {
	return &LineWriter{w: w, width: width, said: map[reasons.Code]string{}}
}

// Check writes one check: "ok  ", "warn" (a pass with a code: degraded, e.g.
// no_cgroup_limits) or "FAIL", the name, the requirement, the code with its sentence and the
// detail; then a "fix:" line under a failed or degraded check that has one.
func (l *LineWriter) Check(c Check) error {
	mark := "ok  "
	switch {
	case !c.OK:
		mark = "FAIL"
	case c.Code != "":
		mark = "warn"
	}
	line := fmt.Sprintf("%s %-*s", mark, l.width, c.Name)
	if c.Requirement != "" {
		line += " [" + c.Requirement + "]"
	}
	text := ""
	if c.Code != "" {
		if first, ok := l.said[c.Code]; ok {
			text = fmt.Sprintf(" %s, as for %s", c.Code, first)
		} else if _, known := reasons.Lookup(c.Code); known {
			l.said[c.Code] = c.Name
			text = fmt.Sprintf(" %s: %s", c.Code, reasons.Text(c.Code))
		} else {
			// A code this program does not carry the sentence of (one of anetd's own).
			text = " " + string(c.Code)
		}
	}
	switch {
	case c.Code != "" && c.Detail != "":
		line += text + " (" + c.Detail + ")"
	case c.Code != "":
		line += text
	case c.Detail != "":
		line += " " + c.Detail
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	if (!c.OK || c.Code != "") && c.Fix != "" {
		fmt.Fprintf(&b, "     fix: %s\n", c.Fix)
	}
	_, err := io.WriteString(l.w, b.String())
	return err
}

// Result writes the command's notes and the last line, "result: ok (N checks)" or "result:
// failed (K of N checks)".
func (l *LineWriter) Result(r Report, notes ...string) error {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(strings.TrimRight(n, "\n") + "\n")
	}
	if r.ExitCode() == ExitOK {
		fmt.Fprintf(&b, "result: ok (%d checks)\n", len(r.Checks))
	} else {
		fmt.Fprintf(&b, "result: failed (%d of %d checks)\n", r.Failed(), len(r.Checks))
	}
	_, err := io.WriteString(l.w, b.String())
	return err
}
