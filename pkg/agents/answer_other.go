//go:build !unix

package agents

// oNoFollow: no such open flags here; the Lstat and Stat checks still apply.
const oNoFollow = 0
