// Package gate folds the probe (S7) into a run, so that a launch builds one sandbox even when
// no passing probe is cached: the run's own pid 1 (anet-runinit) runs the probe's checks in the
// run's sandbox before its agent, reports them to the launcher, and starts the agent only when
// the launcher, which judges them, releases it (P2). A probe on its own is the same run with an
// agent that is never released.
//
// Host is the launcher's side: the canaries the checks aim at (Canaries: a TCP listener on the
// host's loopback, an abstract unix socket in the host's network namespace, and their
// verdict, which launch.RunProbe uses too), and two stream socketpairs whose other ends init
// inherits: the control stream and the echo stream. Init's side is pkg/sandbox/gate/inside
// (its runinit.InitOptions.Gate), with init's flags and the verdict's bytes: a package of its
// own, so that init links none of this one.
//
// On the control stream init writes the checks (pkg/check, one JSON array and a newline) and
// then waits for one byte: inside.Release starts the agent; anything else, or the stream's
// end, keeps it from starting, and init exits. The echo stream is what init's relay reaches
// during the loopback check: the host echoes the first line back, as a run's endpoint answers
// through the relay. The launcher alone judges: the codes of failed checks are its own (F2),
// and a connection that reached its host canary fails the probe whatever init reported; init
// only waits.
package gate

import "time"

// Timeout bounds the wait for init's checks: each check gives up after a few seconds, so a run
// that reports nothing by then is not going to.
const Timeout = 30 * time.Second
