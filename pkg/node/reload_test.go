package node

import (
	"slices"
	"testing"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
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

// U3, F2: what anet-egress last said of the models file is what status shows: its answer to
// the last reload for the helper that gave it, else the helper's hello.
func TestModelsVerdictU3(t *testing.T) {
	refused := preflight.ModelsVerdict{Code: "models_file_invalid", Message: "models file m.yaml: providers.x.cheapest: \"y\" is not in models"}
	hello := privsep.Status{PID: 7, Info: map[string]any{"models_code": string(refused.Code), "models_error": refused.Message}}
	n := &Node{}
	if got := n.modelsVerdict(hello); got != refused {
		t.Fatalf("from the hello: %+v, want %+v", got, refused)
	}
	ok := preflight.ModelsVerdict{OK: true}
	n.keys = &keysSeen{pid: 7, models: &ok}
	if got := n.modelsVerdict(hello); !got.OK {
		t.Fatalf("after an accepted reload: %+v, want OK", got)
	}
	n.keys = &keysSeen{pid: 7, models: &refused}
	if got := n.modelsVerdict(privsep.Status{PID: 7}); got != refused {
		t.Fatalf("after a refused reload: %+v, want %+v", got, refused)
	}
	if got := n.modelsVerdict(privsep.Status{PID: 8}); !got.OK {
		t.Fatalf("a restarted helper that said nothing: %+v, want OK", got)
	}
}
