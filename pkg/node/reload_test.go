package node

import (
	"slices"
	"testing"

	"anet.dev/anet/pkg/config"
)

// U3: a reload names every changed setting it cannot apply and keeps the one in force, so
// `anet status` never shows a value the running listener or sandbox helper does not use.
func TestKeepRestartOnlyU3(t *testing.T) {
	old := config.Default()
	next := old
	next.Listen = "127.0.0.1:1"
	next.KeysFile = "/elsewhere/keys.yaml"
	next.Intake.DiskFreeMin++
	next.AutoReply.Sandbox.Isolation = config.IsolationVM
	next.AutoReply.Sandbox.VMAccel = config.VMAccelKVMOrTCG
	next.AutoReply.Sandbox.RunsPerDay++ // a reloadable setting
	got, changed := keepRestartOnly(old, next)
	want := []string{"listen", "keys_file", "intake", "auto_reply.sandbox.isolation", "auto_reply.sandbox.vm_accel"}
	if !slices.Equal(changed, want) {
		t.Fatalf("restart needed for %v, want %v", changed, want)
	}
	keep := old
	keep.AutoReply.Sandbox.RunsPerDay = next.AutoReply.Sandbox.RunsPerDay
	if got.Listen != keep.Listen || got.KeysFile != keep.KeysFile || got.Intake != keep.Intake ||
		got.AutoReply.Sandbox.Isolation != keep.AutoReply.Sandbox.Isolation || got.AutoReply.Sandbox.VMAccel != keep.AutoReply.Sandbox.VMAccel ||
		got.AutoReply.Sandbox.RunsPerDay != keep.AutoReply.Sandbox.RunsPerDay {
		t.Fatalf("kept %+v, want the restart-only settings in force and the rest reloaded", got)
	}
	if _, changed := keepRestartOnly(old, old); len(changed) != 0 {
		t.Fatalf("an unchanged file needs a restart for %v", changed)
	}
}
