//go:build !anettest

package node

// testPassThrough is empty in release builds: no test hook reaches a helper.
var testPassThrough = map[string][]string{}
