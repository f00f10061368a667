package testkit

import "time"

// T is the part of testing.TB the helpers use; *testing.T and *testing.B satisfy it.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Wait is how long WaitFor waits. It is generous because a loaded two-core CI machine can be
// slow; a condition that holds ends the wait at once, so a passing test never waits it out.
const Wait = 60 * time.Second

// pollEvery is the time between two looks at a condition.
const pollEvery = 10 * time.Millisecond

// Until looks at cond until it holds or within has passed, and reports whether it held.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// WaitFor waits up to Wait for cond and fails the test, naming what it waited for, if cond
// never held.
func WaitFor(t T, what string, cond func() bool) {
	t.Helper()
	if !Until(Wait, cond) {
		t.Fatalf("%s: not reached within %v", what, Wait)
	}
}

// WaitWithin waits up to within for cond and returns how long it took; it fails the test,
// naming what it waited for, if cond never held. For the few promises that are a bound in
// time themselves ("runs end within 2 s of the launcher").
func WaitWithin(t T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !Until(within, cond) {
		t.Fatalf("%s: not reached within %v", what, within)
	}
	return time.Since(start)
}
