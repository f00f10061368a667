// Package packaging holds the distro packaging of the node (C4): the nfpm configuration of
// the deb and rpm, the systemd units, the man pages and the shell completions of anet. It has
// no code; its tests check that the units pass systemd-analyze, the man pages render without
// warnings and document the current CLI, the completions offer every command and flag, and
// nfpm.yaml installs what the units and pages name. `make package` builds the packages.
package packaging
