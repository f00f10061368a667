package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
)

// hostile is what a peer or an agent might write to reach the operator's terminal (U1).
const hostile = testkit.HostileText

func assertNoRaw(t *testing.T, what, out string) {
	t.Helper()
	if c := testkit.RawTerminalControl(out); c != "" {
		t.Errorf("%s writes raw %q:\n%q", what, c, out)
	}
}

// U1: anet show renders the task, the reply and every peer-chosen field visibly; each line
// of a peer's text carries the prefix, so "state: answered" cannot pass for the CLI's line.
func TestShowRendersPeerTextSafely(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	it := control.Interaction{
		Interaction: "ix-1", Peer: "an\x1b[31mpeer", Direction: "in", State: "answered", Text: hostile,
		SentAt: at, Answer: &control.Answer{Type: "reply", Text: "line1\n" + hostile, At: at},
		Delivery: []control.Delivery{{MsgID: "m-1", Type: "reply", State: "failed", LastError: "dial: \x1b[2J"}},
		Runs:     []control.Run{{Run: "r\x1b[1m", Route: "sandbox", At: at, Metered: true, Model: "m\x07"}},
		RunLogs:  []control.RunLog{{Run: "r\x1b[1m", Text: hostile}},
	}
	var b bytes.Buffer
	printInteraction(&b, it)
	out := b.String()
	assertNoRaw(t, "anet show", out)
	wantTask := "  | please\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x1b]0;owned\\x07\\r\n  | state: answered\\u009b31m\\x7f\\u202egnp.exe\n"
	for _, want := range []string{
		"interaction ix-1 (from an\\x1b[31mpeer, trusted: false)\n",
		"task (" + at.Local().Format(time.RFC3339) + "):\n" + wantTask,
		"reply (" + at.Local().Format(time.RFC3339) + "):\n  | line1\n" + wantTask,
		"last error: dial: \\x1b[2J\n",
		"run r\\x1b[1m (sandbox, not counted, " + at.Local().Format(time.RFC3339) + "): model m\\x07;",
		"log of run r\\x1b[1m:\n" + wantTask,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("anet show output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "state: answered\\u009b") {
			t.Errorf("a peer's line passes for the CLI's: %q", line)
		}
	}
}

// U1: the inbox table keeps one row per task whatever the text holds.
func TestInboxRendersPeerTextSafely(t *testing.T) {
	var b bytes.Buffer
	if err := printInbox(&b, []control.Interaction{{Interaction: "ix-\u202e1", Peer: "anpeer", State: "new", Text: hostile}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	assertNoRaw(t, "anet inbox", out)
	if n := strings.Count(out, "\n"); n != 2 {
		t.Fatalf("inbox with one task printed %d lines:\n%s", n, out)
	}
	if !strings.Contains(out, `ix-\u202e1`) || !strings.Contains(out, `please\x1b]52;c;`) {
		t.Fatalf("inbox does not show the escapes visibly:\n%s", out)
	}
}

// U1: evidence details quote peers; the listing shows them visibly, one line per entry.
func TestEvidenceRendersDetailsSafely(t *testing.T) {
	det, _ := json.Marshal(map[string]string{"text": hostile})
	var b bytes.Buffer
	if err := printEvidence(&b, []control.EvidenceEntry{{Seq: 1, Kind: "operator_note", Interaction: "ix\x1b", Details: det}}); err != nil {
		t.Fatal(err)
	}
	assertNoRaw(t, "anet evidence show", b.String())
	if strings.Count(b.String(), "\n") != 2 {
		t.Fatalf("one entry took more than one line:\n%s", b.String())
	}
}
