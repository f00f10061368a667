//go:build anettest

package node

import "time"

// testPassThrough lets end-to-end tests hand the egress helper the loopback redirects that
// only a test-built anet-egress reads (see pkg/egress dial_anettest.go).
var testPassThrough = map[string][]string{"egress": {"ANET_TEST_REDIRECTS"}}

// testWallEvery lets end-to-end tests shorten anetd's proofs of the wall or switch them off
// (ANET_TEST_WALL_EVERY: a duration, or "off"): unset, anetd proves as released.
func testWallEvery(env func(string) string) (time.Duration, bool) {
	v := env("ANET_TEST_WALL_EVERY")
	if v == "" {
		return 0, false
	}
	if v == "off" {
		return -1, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}
