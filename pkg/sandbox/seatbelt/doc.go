// Package seatbelt is the macOS isolation backend of pkg/sandbox/launch (registered as
// "seatbelt" on darwin): runs start under /usr/bin/sandbox-exec with one static profile
// (profile.sb, embedded) that denies everything by default and opens only system libraries
// and tools, the active developer dir (DeveloperDir) and Homebrew OpenSSL's public files,
// the run's own home, tmp and work dir, the agent's installation, the run's own terminals and
// the run's endpoint on the host loopback (M1).
//
// What is pure, and tested on every platform: the profile and its parameters (Params, the
// developer dir's lookup DeveloperDir), what the profile grants (read by its last-match rule
// in the tests), the argument list (Argv, golden-tested) and the environment (RunEnv), the profile linter (Lint: an S-expression parser
// and a list of forms a profile must never contain), the self-check items that run inside
// the profile (RunChecks), the host-side canaries they aim at, and the limits wrapper that
// sets a run's resource limits before sandbox-exec (Wrap). What needs a Mac lives in the
// darwin files: the backend itself (start, watch, stop), the process tracking that stands in
// for a cgroup, the probe, and the libSystem calls some items make without cgo
// (sandbox_check, proc_info, ptsname: libsystem_darwin.go). integration/macos/check.sh proves on a Mac what no Linux
// test can: that the profile compiles and is enforced.
//
// Seatbelt has no network namespace and no mount namespace. So the run's endpoint is a TCP
// port on the host's loopback that refuses every request without the run's placeholder
// (pkg/endpoint, loopback mode), and the run sees host paths: its home and tmp are
// <RunRoot>/<ID>/{home,tmp} (sandbox.HostRunDirs). Before every turn the backend runs the
// self-check inside the same profile, with the run's own parameters; one failed item and the
// turn does not start (selfcheck_failed; the requester gets sandbox_unavailable).
package seatbelt
