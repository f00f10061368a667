package config

import (
	"slices"
	"testing"
)

// TestLauncherArgsFollowConfig: the tier and the TCG allowance reach anet-sandboxd's
// serve only as the config says (V1); TCG is never allowed by default.
func TestLauncherArgsFollowConfig(t *testing.T) {
	def := Default().AutoReply.Sandbox
	if got := def.LauncherArgs(Paths{CacheDir: "/c/anet"}); len(got) != 0 {
		t.Errorf("default = %q, want none: the platform's first backend (bwrap here), no TCG", got)
	}
	s := def
	s.Isolation, s.VMAccel = IsolationVM, VMAccelKVMOrTCG
	if got := s.LauncherArgs(Paths{CacheDir: "/c/anet"}); !slices.Equal(got, []string{"--isolation", "vm", "--vm-cache", "/c/anet/vm", "--vm-allow-tcg"}) {
		t.Errorf("vm, kvm_or_tcg = %q", got)
	}
	s.VMAccel = VMAccelKVM
	if got := s.LauncherArgs(Paths{CacheDir: "/c/anet"}); slices.Contains(got, "--vm-allow-tcg") {
		t.Errorf("vm, kvm = %q: TCG allowed without the operator asking", got)
	}
}
