package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/reasons"
)

// failedProof is a failed proof whose item quotes what a sandboxed agent could have written.
func failedProof(at time.Time) *control.WallProof {
	return &control.WallProof{At: at, OK: false, Why: "daily", Tier: "bwrap", Version: "v1", Seq: 41,
		Failed: []string{"sandbox.attack.af_vsock", "sandbox.attack.int80", "egress.x", "egress.y"},
		Items:  []check.Check{{Name: "sandbox.attack.af_vsock", Requirement: "S4", Detail: "socket: " + hostile, Fix: "anet-sandboxd self-test"}}}
}

// S7, U1: anet status has one line for the last proof of the wall: when, why, the tier and
// the verdict, with the failed items (the first three and how many more), rendered safely
// (an item's detail may quote an agent); and the wall_unproven warning under it.
func TestStatusShowsTheWallS7(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	when := at.Local().Format(time.DateTime + " MST")
	for _, c := range []struct {
		name string
		wall *control.WallProof
		want string
	}{
		{"none", nil, "not proved yet (anet doctor --prove proves it now)\n"},
		{"passed", &control.WallProof{At: at, OK: true, Why: "upgrade", Tier: "vm", Failed: []string{}}, "proved " + when + " (upgrade, tier vm)\n"},
		{"failed", failedProof(at), "NOT proved " + when + " (daily, tier bwrap): failed sandbox.attack.af_vsock, sandbox.attack.int80, egress.x, and 1 more; sandboxed turns are refused (wall_unproven)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := control.Status{AID: "anaid", Wall: c.wall, AutoReply: control.AutoReplyStatus{Compiled: false}}
			if c.wall != nil && !c.wall.OK {
				st.Warnings = []control.Warning{{Code: string(reasons.WallUnproven), Text: reasons.Text(reasons.WallUnproven), Detail: "sandbox.attack.af_vsock failed: " + hostile}}
			}
			var b bytes.Buffer
			printStatus(&b, st)
			out := b.String()
			assertNoRaw(t, "anet status", out)
			if !regexp.MustCompile(`(?m)^wall:\s+` + regexp.QuoteMeta(c.want)).MatchString(out) {
				t.Fatalf("anet status lacks the line wall: %q:\n%s", c.want, out)
			}
			if c.wall != nil && !c.wall.OK && !strings.Contains(out, "  wall_unproven: "+reasons.Text(reasons.WallUnproven)+" (sandbox.attack.af_vsock failed: please\\x1b]52;") {
				t.Fatalf("anet status lacks the wall_unproven warning with the item:\n%s", out)
			}
		})
	}
}

// S7, S8, U1: anet doctor --prove prints the proof in the check shape: each item, the failed
// one with its fix, the proof's line (verdict, time, why, tier, entry) and the result, with
// an agent's text in a detail shown visibly.
func TestProofRendersSafelyS7(t *testing.T) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	p := *failedProof(at)
	p.Items = append([]check.Check{{Name: "sandbox.probe.loopback", Requirement: "S7", OK: true, Detail: "answers"}}, p.Items...)
	var b bytes.Buffer
	if err := printWallProof(&b, p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	assertNoRaw(t, "anet doctor --prove", out)
	for _, want := range []string{
		"ok   sandbox.probe.loopback  [S7] answers\n",
		"FAIL sandbox.attack.af_vsock [S4] socket: please\\x1b]52;",
		"fix: anet-sandboxd self-test\n",
		"wall: NOT proved " + at.Local().Format(time.DateTime+" MST") + " (daily, tier bwrap, evidence entry 41)\n",
		"result: failed (1 of 2 checks)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("anet doctor --prove output lacks %q:\n%s", want, out)
		}
	}
	if check.New(p.Items...).ExitCode() != check.ExitFailed {
		t.Fatal("a failed proof must exit non-zero")
	}
}
