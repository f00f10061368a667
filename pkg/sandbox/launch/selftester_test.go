//go:build linux

package launch

import (
	"context"
	"strings"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// selfTestingBackend is a testBackend with a self-test of its own (as Seatbelt has), whose
// checks before each run can be made to fail (as Seatbelt's self-check before a turn).
type selfTestingBackend struct {
	testBackend
	checks   []check.Check
	startErr error
}

func (b *selfTestingBackend) SelfTest(context.Context, SelfTestOptions) ([]check.Check, error) {
	return b.checks, nil
}

func (b *selfTestingBackend) Start(ctx context.Context, p *Plan, stdio sandbox.Stdio) (Run, error) {
	if b.startErr != nil {
		return nil, b.startErr
	}
	return b.testBackend.Start(ctx, p, stdio)
}

// S8, M1: a backend with a self-test of its own gives `anet-sandboxd self-test` its checks
// (attack.NAME) after the probe's, in place of the Linux attack battery; one failed check
// fails the self-test.
func TestSelfTestOfTheBackendM1(t *testing.T) {
	b := &selfTestingBackend{testBackend: testBackend{probeOK: true},
		checks: []check.Check{check.Pass("secrets", "F3,M1", "EPERM"), check.Fail("decoy_port", "S2,M1", reasons.SelfCheckFailed, "connected")}}
	registerTestBackend(t, "selftesting", b)
	l := newLauncher(t, Options{})
	rep, err := SelfTest(context.Background(), l, SelfTestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "probe.loopback attack.secrets attack.decoy_port" || rep.OK || rep.ExitCode() != check.ExitFailed {
		t.Fatalf("self-test = %s, ok %v; want the probe's check, then the backend's two, failed", got, rep.OK)
	}
}

// M1: a failed self-check before a run drops the cached probe: the next probe runs afresh
// instead of vouching for a sandbox a run just found wanting.
func TestFailedCheckBeforeARunDropsTheProbeM1(t *testing.T) {
	b := &selfTestingBackend{testBackend: testBackend{probeOK: true}}
	registerTestBackend(t, "checking", b)
	l := newLauncher(t, Options{})
	spec := sandbox.Spec{ID: "c1", Mode: sandbox.ModeSandbox, Argv: []string{"/bin/true"}, RunRoot: t.TempDir()}
	r, err := l.Start(context.Background(), spec, sandbox.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	l.Probe(context.Background())
	if n := b.probes.Load(); n != 1 {
		t.Fatalf("%d probes after a run and a probe, want 1 (cached)", n)
	}
	b.startErr = reasons.New(reasons.SelfCheckFailed, "decoy_port: connected")
	spec.ID = "c2"
	if _, err := l.Start(context.Background(), spec, sandbox.Stdio{}); sandbox.CodeOf(err) != reasons.SelfCheckFailed {
		t.Fatalf("Start = %v, want selfcheck_failed", err)
	}
	l.Probe(context.Background())
	if n := b.probes.Load(); n != 2 {
		t.Fatalf("%d probes, want 2: the failed check must drop the cached pass", n)
	}
}
