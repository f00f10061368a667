package integration

// The micro-VM tier end to end (V1, P2, E1, F1): real anetd with auto_reply.sandbox.isolation
// vm, anet-sandboxd booting a guest under QEMU's software emulation (the test machine has
// no usable KVM), anet-egress, a fake model service over real TLS, and the test agent as
// `claude` inside the guest. One node, two boots (the probe's and the run's).

import (
	"os"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
)

// TestAutoReplyThroughVM: a peer's task answered by the test agent in a guest, through the
// link and the endpoint, and status naming the tier (V1, E1, P2).
func TestAutoReplyThroughVM(t *testing.T) {
	if _, err := os.Stat("/usr/bin/qemu-system-x86_64"); err != nil {
		t.Fatalf("QEMU is not installed; run: apt-get install -y qemu-system-x86 (%v)", err)
	}
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec + "  sandbox:\n    isolation: vm\n    vm_accel: kvm_or_tcg\n"})
	// The guest kernel is extracted once per machine, into the test user's own cache.
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b.path("cache", "anet"), 0o700); err != nil { // the node's <cache>/anet/vm is this machine's
		t.Fatal(err)
	}
	if err := os.MkdirAll(cache+"/anet/vm", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cache+"/anet/vm", b.path("cache", "anet", "vm")); err != nil {
		t.Fatal(err)
	}
	a, aidA, aidB := startPair(t, b)
	id := send(t, a, aidB, "what is 6*7?")
	// Extraction at first use, the probe's boot and the run's under TCG: minutes, not seconds.
	testkit.WaitWithin(t, "the answer through the VM", 5*time.Minute, func() bool {
		l := a.show(id)
		return len(l) == 1 && l[0].Answer != nil
	})
	ans := *a.show(id)[0].Answer
	if want := "model " + arPinned + " says hello to: what is 6*7?"; ans.Type != "reply" || ans.Text != want {
		t.Fatalf("A's answer = %+v, want the reply %q", ans, want)
	}
	if _, err := os.Stat(b.path("cache", "anet", "work-sandbox", aidA, id, "started")); err != nil {
		t.Fatalf("the agent's marker is not in the sandboxed work dir: %v", err)
	}
	if reqs := f.up.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("upstream requests = %d, want the agent's one /v1/messages", len(reqs))
	}
	if p := f.up.Problems(); len(p) > 0 {
		t.Fatalf("upstream saw rule violations: %v", p)
	}
	// Status says which tier answered (V1).
	if st := b.status(); st.AutoReply.Sandbox.Tier != "vm (tcg, serial)" {
		t.Fatalf("status sandbox = %+v, want tier vm (tcg, serial)", st.AutoReply.Sandbox)
	}
	if out := b.mustAnet("status"); !strings.Contains(out, "vm (tcg, serial)") {
		t.Fatalf("anet status = %q, want the isolation line", out)
	}
}
