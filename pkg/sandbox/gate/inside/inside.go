// Package inside is the gate's half in the run's init (anet-runinit): it runs the probe's
// checks (S7) in the run's sandbox, reports them on the control stream and waits for the
// launcher's verdict before the agent may start (P2). The launcher's half, and the protocol
// between the two, are pkg/sandbox/gate's. This half is its own package so that init, which
// every launch waits for, links none of the launcher's code (the canaries, the judge, the
// probe result and the crypto they use).
package inside

// Init's flags that carry the gate (anet-runinit).
const (
	// FlagFDs is init's descriptors of the control and echo streams, "CTL,ECHO".
	FlagFDs = "gate"
	// FlagTargets is what the checks aim at (attack.ProbeTargets as JSON).
	FlagTargets = "gate-targets"
)

// The launcher's verdict on the control stream.
const (
	Release byte = 'y' // the checks passed: start the agent
	Refuse  byte = 'n' // a check failed, or a probe on its own: do not
)
