// Package packaging holds the distro packaging of the node (C4): the nfpm configuration of
// the deb and rpm, the systemd units, the man pages and the shell completions of anet, the
// lintian overrides and rpmlint configuration, and check-elf.sh; pkgmeta (a build tool)
// makes the version, the changelog and the copyright file. This package has no code; its
// tests check that the units pass systemd-analyze (verify and the security score), that each
// hardening directive keeps a sandboxed run working (testdata/unitsandbox applies them the
// way systemd would), that the man pages render without warnings and document the current
// CLI, that the completions offer every command and flag, and they build both packages with
// `make package`, lint them, and install the .deb into a throw-away root.
package packaging
