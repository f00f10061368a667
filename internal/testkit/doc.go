// Package testkit holds what the tests of several packages need alike: waiting for a
// condition with a deadline, a loopback server loop, fixed-seed keys, a buffer for a child's
// output, the hostile text of the terminal-safety tests, the seeded mutation of the JSON
// readers' differential tests and the check for the guest kernel package the vm tier's tests
// need. It is for tests only: what a release binary needs (the CA of
// anet-egress's self-test and anet-demo) is product code in its own package, and
// internal/boundaries checks that no release binary links a test package. It imports no
// testing package all the same (a test passes its *testing.T as a T).
package testkit
