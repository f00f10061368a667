package integration

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
)

func hasReason(st control.Status, code string) bool {
	for _, r := range st.AutoReply.Reasons {
		if r.Code == code {
			return true
		}
	}
	return false
}

// U3: settings change without a restart. A change made by the CLI while a turn runs is
// applied at once ("applied"), the running turn finishes with the settings it started with,
// the next task gets the new ones; a file that breaks a rule on reload keeps the old settings,
// says why (exit 1, reload_failed in status); SIGHUP and anetd --reload reload too; and
// anet-egress reads the keys file again.
func TestReloadUnderARunningTurn(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	a, _, aidB := startPair(t, b)

	id1 := send(t, a, aidB, "SLOW question")
	testkit.WaitFor(t, "the run in flight at B", func() bool { return b.status().AutoReply.RunsActive == 1 })
	// runs_per_day 0 holds untrusted tasks in the inbox (B3): easy to see for the next task.
	out, errOut, err := b.anet("autoreply", "set", "sandbox.runs_per_day", "0")
	if err != nil || !strings.Contains(out, "written to") || !strings.Contains(out, "and applied") {
		t.Fatalf("anet autoreply set while a run is in flight = %v %q %q, want it applied", err, out, errOut)
	}
	if st := b.status(); st.AutoReply.RunsActive != 1 || st.Budget.RunsPerDay != 0 {
		t.Fatalf("after the reload: %d runs active, runs_per_day %d; want the run still going and the new budget", st.AutoReply.RunsActive, st.Budget.RunsPerDay)
	}
	if ans := answerAt(t, a, id1); ans.Type != "reply" || !strings.Contains(ans.Text, "SLOW question") {
		t.Fatalf("the run in flight ended with %+v, want its reply", ans)
	}
	id2 := send(t, a, aidB, "second question")
	testkit.WaitFor(t, "the second task held by the new budget", func() bool { return hasReason(b.status(), "budget_zero") })
	if l := b.show(id2); l[0].State != "new" || l[0].Answer != nil {
		t.Fatalf("the second task = %+v, want it held in the inbox", l[0])
	}

	// A file that breaks a rule: nothing changes, the command says why and exits 1.
	cfg := b.path("config", "anet", "config.yaml")
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, string(good)+"  bogus_key: 1\n", 0o600)
	out, errOut, err = b.anet("reload")
	if err == nil || !strings.Contains(errOut, "bogus_key") || !strings.Contains(errOut, "reason: config_invalid") {
		t.Fatalf("anet reload of a bad file = %v %q %q, want exit 1 naming the key and config_invalid", err, out, errOut)
	}
	st := b.status()
	if st.Reload == nil || st.Reload.OK || !hasWarning(st, "reload_failed") || st.Budget.RunsPerDay != 0 {
		t.Fatalf("status after a refused reload: reload %+v, warnings %+v, runs_per_day %d; want reload_failed and the old settings", st.Reload, st.Warnings, st.Budget.RunsPerDay)
	}

	// SIGHUP, after the file is fixed (runs_per_day 7).
	writeFile(t, cfg, strings.Replace(string(good), "runs_per_day: 0", "runs_per_day: 7", 1), 0o600)
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the SIGHUP reload", func() bool { st := b.status(); return st.Budget.RunsPerDay == 7 && !hasWarning(st, "reload_failed") })

	// anet-egress reads the keys file again: a provider added to it shows up.
	writeFile(t, b.path("config", "anet", "keys.yaml"), "anthropic: "+f.key+"\nopenai: sk-openai-test\n", 0o600)
	r := runProgram(t, "anetd --reload", b.env, testharness.Bin(t, "anetd"), "--reload")
	if r.code != 0 || !strings.Contains(r.out, "anetd reloaded") {
		t.Fatalf("anetd --reload = %d %q", r.code, r.out)
	}
	if st := b.status(); !slices.Equal(st.ProvidersKeyed, []string{"anthropic", "openai"}) {
		t.Fatalf("providers with a key after the reload = %v, want anthropic and openai", st.ProvidersKeyed)
	}
	// A keys file others can read is refused on reload; the keys in use stay.
	os.Chmod(b.path("config", "anet", "keys.yaml"), 0o644)
	if _, errOut, err := b.anet("reload"); err == nil || !strings.Contains(errOut, "reason: keys_file_exposed") {
		t.Fatalf("anet reload with an exposed keys file = %v %q, want keys_file_exposed", err, errOut)
	}
	if st := b.status(); !slices.Equal(st.ProvidersKeyed, []string{"anthropic", "openai"}) {
		t.Fatalf("providers with a key after a refused reload = %v, want the ones in use kept", st.ProvidersKeyed)
	}
}
