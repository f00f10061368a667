// Package testkit holds what the tests of several packages need alike: waiting for a
// condition with a deadline, a throw-away certificate authority, a loopback server loop,
// fixed-seed keys, a buffer for a child's output, the hostile text of the terminal-safety
// tests and the check for the guest kernel package the vm tier's tests need. It imports no
// testing package (a test passes its *testing.T as a T), so the self-test modes of the
// release helpers, which start a fake upstream behind the test CA, may link it;
// internal/boundaries checks that no release binary links the testing package.
package testkit
