package check

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

func TestVerdictAndExitCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		checks []Check
		ok     bool
		exit   int
	}{
		{"all pass", []Check{Pass("a", "S7", "fine"), Pass("b", "", "")}, true, ExitOK},
		{"one fails", []Check{Pass("a", "", ""), Fail("b", "L1", reasons.NoBwrap, "")}, false, ExitFailed},
		// An empty report proves nothing: never a pass.
		{"no checks", nil, false, ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.checks...)
			if r.OK != tc.ok || r.ExitCode() != tc.exit {
				t.Fatalf("New(%v) = ok %v exit %d, want %v and %d", tc.checks, r.OK, r.ExitCode(), tc.ok, tc.exit)
			}
		})
	}
	// A report whose OK was set by hand over a failed check still exits ExitFailed.
	forged := Report{OK: true, Checks: []Check{Fail("x", "", "", "")}}
	if forged.ExitCode() != ExitFailed {
		t.Fatalf("ExitCode of a forged ok report = %d, want %d", forged.ExitCode(), ExitFailed)
	}
	var r Report
	r.Add(Pass("a", "", ""))
	r.Add(Fail("b", "", "", "no"))
	if r.OK || r.Failed() != 1 {
		t.Fatalf("after Add: ok %v failed %d, want false and 1", r.OK, r.Failed())
	}
}

// The JSON shape: one object, every check carries all six keys.
func TestJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, New(Pass("loopback", "S7", "relay echoed"))); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Fatal("WriteJSON wrote more than one JSON value")
	}
	if doc["ok"] != true {
		t.Fatalf("ok = %v", doc["ok"])
	}
	checks := doc["checks"].([]any)
	var keys []string
	for k := range checks[0].(map[string]any) {
		keys = append(keys, k)
	}
	want := []string{"code", "detail", "fix", "name", "ok", "requirement"}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("check keys = %v, want %v", keys, want)
	}
}

func TestText(t *testing.T) {
	r := New(
		Pass("loopback", "S7", "relay echoed"),
		Check{Name: "bubblewrap", Requirement: "L1", Code: reasons.NoBwrap, Detail: "bwrap is not on PATH", Fix: "sudo apt-get install bubblewrap"},
	)
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "ok   loopback   [S7] relay echoed\n" +
		"FAIL bubblewrap [L1] no_bwrap: " + reasons.Text(reasons.NoBwrap) + " (bwrap is not on PATH)\n" +
		"     fix: sudo apt-get install bubblewrap\n" +
		"result: failed (1 of 2 checks)\n"
	if b.String() != want {
		t.Fatalf("WriteText =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	New(Pass("a", "", "")).WriteText(&b, "limits: full")
	if !strings.HasSuffix(b.String(), "limits: full\nresult: ok (1 checks)\n") {
		t.Fatalf("WriteText of a passing report = %q", b.String())
	}
}

// S8: each reason is said once: a second check with the same code refers to the first; a
// degraded pass is marked warn and shows its fix.
func TestTextSaysEachReasonOnce(t *testing.T) {
	r := New(
		Check{Name: "host.bubblewrap", Code: reasons.NoBwrap, Detail: "not on the helpers' PATH", Fix: "sudo apt-get install bubblewrap"},
		Check{Name: "node.sandbox", Code: reasons.NoBwrap, Detail: "anet-sandboxd finds no bwrap"},
		Check{Name: "node.limits", OK: true, Code: reasons.NoCgroupLimits, Fix: "systemctl --user enable --now anetd"},
	)
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, reasons.Text(reasons.NoBwrap)); n != 1 {
		t.Errorf("the sentence of no_bwrap is written %d times:\n%s", n, out)
	}
	for _, want := range []string{
		"FAIL node.sandbox    no_bwrap, as for host.bubblewrap (anet-sandboxd finds no bwrap)\n",
		"warn node.limits     no_cgroup_limits: " + reasons.Text(reasons.NoCgroupLimits) + "\n     fix: systemctl --user enable --now anetd\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteText lacks %q:\n%s", want, out)
		}
	}
}

func TestPrefixed(t *testing.T) {
	in := []Check{Pass("loopback", "", "")}
	out := Prefixed("probe", in)
	if out[0].Name != "probe.loopback" || in[0].Name != "loopback" {
		t.Fatalf("Prefixed = %q (input now %q), want probe.loopback and the input unchanged", out[0].Name, in[0].Name)
	}
}
