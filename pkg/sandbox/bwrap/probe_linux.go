package bwrap

import (
	"context"
	"strings"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/launch"
)

// ConfigHash implements launch.Backend. It identifies the sandbox configuration: bwrap, the
// rendered argv template, the seccomp programs and the limits mechanism. A change of any of
// them invalidates the probe cache.
func (l *Backend) ConfigHash() (string, error) {
	bw, err := l.bwrapPath()
	if err != nil {
		return "", err
	}
	initBin, err := l.initPath()
	if err != nil {
		return "", err
	}
	progs, err := l.cfg.Filters()
	if err != nil {
		return "", reasons.New(reasons.SeccompFailed, err.Error())
	}
	spec := sandbox.Spec{ID: "x", Mode: sandbox.ModeSandbox, Argv: []string{"/x"}, RunRoot: "/r", Endpoint: "/e", Port: 1}
	lay := Layout{SystemDirs: launch.HostSystemDirs(), Home: "/h", Tmp: "/t", Work: "/w", Endpoint: "/e", Init: initBin, Self: l.cfg.Self,
		SeccompFDs: []int{3, 4}, EnvFD: 5, StatusFD: 6, BlockFD: 7, Hostname: l.cfg.Hostname, Unsafe: l.unsafe}
	args, err := Args(spec, lay)
	if err != nil {
		return "", err
	}
	parts := [][]byte{[]byte(bw), []byte(strings.Join(args, "\x00")), []byte(l.mech.Mode)}
	parts = append(parts, progs...)
	return sandbox.ConfigHash(parts...), nil
}

// Probe implements launch.Backend: the S7 checks, run now in a sandbox built exactly like a
// run's (launch.RunProbe opens the canaries and judges the checks).
func (l *Backend) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	var warn []reasons.Code
	if l.mech.Mode == LimitsNone {
		warn = append(warn, reasons.NoCgroupLimits)
	}
	return launch.RunProbe(ctx, l.Start, attack.ProbeTargets{}, warn)
}
