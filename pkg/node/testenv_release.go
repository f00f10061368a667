//go:build !anettest

package node

import "time"

// testPassThrough is empty in release builds: no test hook reaches a helper.
var testPassThrough = map[string][]string{}

// testWallEvery is never set in release builds: anetd proves the wall by its own schedule.
func testWallEvery(func(string) string) (time.Duration, bool) { return 0, false }
