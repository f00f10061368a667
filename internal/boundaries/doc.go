// Package boundaries holds only tests: they check, from the build graph and the built
// binaries, the separation the architecture promises (C3, docs/architecture.md rule 1). A change that
// makes anetd link the keys reader, or puts a test hook in a release binary, fails here.
package boundaries
