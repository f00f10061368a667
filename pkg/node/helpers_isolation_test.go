package node

import (
	"slices"
	"testing"

	"anet.dev/anet/pkg/config"
)

// TestSandboxdIsolationFollowsConfig: the tier and the TCG allowance reach anet-sandboxd's
// serve only as the config says (V1); TCG is never allowed by default.
func TestSandboxdIsolationFollowsConfig(t *testing.T) {
	def := config.Default().AutoReply.Sandbox
	if got := sandboxdIsolation(config.Paths{CacheDir: "/c/anet"}, def); !slices.Equal(got, []string{"--isolation", "bwrap"}) {
		t.Errorf("default = %q, want bwrap without TCG", got)
	}
	s := def
	s.Isolation, s.VMAccel = config.IsolationVM, config.VMAccelKVMOrTCG
	if got := sandboxdIsolation(config.Paths{CacheDir: "/c/anet"}, s); !slices.Equal(got, []string{"--isolation", "vm", "--vm-cache", "/c/anet/vm", "--vm-allow-tcg"}) {
		t.Errorf("vm, kvm_or_tcg = %q", got)
	}
	s.VMAccel = config.VMAccelKVM
	if got := sandboxdIsolation(config.Paths{CacheDir: "/c/anet"}, s); slices.Contains(got, "--vm-allow-tcg") {
		t.Errorf("vm, kvm = %q: TCG allowed without the operator asking", got)
	}
}
