//go:build anettest

package node

// testPassThrough lets end-to-end tests hand the egress helper the loopback redirects that
// only a test-built anet-egress reads (see pkg/egress dial_anettest.go).
var testPassThrough = map[string][]string{"egress": {"ANET_TEST_REDIRECTS"}}
