// Package memfd makes the anonymous files the node hands to a child process: sealed ones
// whose content cannot change between writing and the child's read (seccomp programs and a
// run's environment for bwrap), and empty ones a run writes its output into.
package memfd
