package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
)

// N2, C3, F1: anet-egress stopped with SIGSTOP (it exists, it answers nothing) is shown
// unresponsive, with how long, in `anet status` and `anet doctor` (text and JSON); a run
// fails closed at once instead of waiting on it; after the longer deadline it is killed and
// restarted like a crashed helper, and runs work again.
func TestStoppedHelperUnresponsiveThenRestarted(t *testing.T) {
	f := newARFake(t, t.TempDir(), arPinned)
	b := newARNode(t, f, arOptions{autoReply: sandboxExec})
	b.arStart()
	pid := b.helper("egress")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	egress := func(st control.Status) privsep.Status {
		for _, h := range st.Helpers {
			if h.Name == "egress" {
				return h
			}
		}
		t.Fatalf("no egress in %+v", st.Helpers)
		return privsep.Status{}
	}
	testkit.WaitFor(t, "egress unresponsive", func() bool { return egress(b.status()).State == privsep.StateUnresponsive })
	time.Sleep(time.Second) // so "for how long" is at least 1 s
	st := b.status()
	if h := egress(st); h.PID != pid || h.UnresponsiveSeconds < 1 || h.Restarts != 0 {
		t.Fatalf("egress in status --json = %+v, want pid %d unresponsive for at least 1 s, no restart yet", h, pid)
	}
	if !hasWarning(st, string(reasons.HelperUnresponsive)) {
		t.Fatalf("status warnings = %+v, want %s", st.Warnings, reasons.HelperUnresponsive)
	}
	for _, w := range st.Warnings {
		if w.Code == string(reasons.HelperUnresponsive) && !strings.Contains(w.Detail, "no answer for") {
			t.Fatalf("warning %+v does not say for how long", w)
		}
	}
	if out := b.mustAnet("status"); !strings.Contains(out, "unresponsive for") || !strings.Contains(out, string(reasons.HelperUnresponsive)) {
		t.Fatalf("anet status:\n%s\nwant egress unresponsive for how long, and the warning", out)
	}
	out, _, err := b.anet("doctor", "--json")
	var rep struct {
		OK   bool            `json:"ok"`
		Node *control.Status `json:"node"`
	}
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil || err == nil || rep.OK || rep.Node == nil || egress(*rep.Node).State != privsep.StateUnresponsive {
		t.Fatalf("anet doctor --json = %v, %s, want a failure showing egress unresponsive", err, out)
	}
	if out, _, _ := b.anet("doctor"); !strings.Contains(out, "FAIL node.egress") || !strings.Contains(out, "[N2] helper_unresponsive") || !strings.Contains(out, "unresponsive for") {
		t.Fatalf("anet doctor:\n%s\nwant egress marked FAIL, unresponsive for how long", out)
	}

	// A run fails closed: the endpoint stage meets helper_down, nothing reaches the model.
	before := len(f.up.Requests())
	var tr control.AutoReplyTest
	out, _, _ = b.anet("autoreply", "test", "--json")
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("anet autoreply test --json: %v\n%s", err, out)
	}
	failed := check.Check{}
	for _, s := range tr.Checks {
		if !s.OK {
			failed = s
			break
		}
	}
	if tr.OK || failed.Name != "endpoint" || failed.Code != reasons.HelperDown || !strings.Contains(failed.Detail, "unresponsive") {
		t.Fatalf("anet autoreply test while egress is stopped = %s, want the endpoint stage refused with helper_down", out)
	}
	if n := len(f.up.Requests()); n != before {
		t.Fatalf("the model service got %d requests while egress was stopped", n-before)
	}

	// Killed and restarted after the longer deadline, like a crashed helper.
	testkit.WaitFor(t, "egress replaced", func() bool {
		h := egress(b.status())
		return h.State == privsep.StateRunning && h.PID != pid
	})
	h := egress(b.status())
	if h.Restarts != 1 || !strings.Contains(h.LastError, "did not answer for") {
		t.Fatalf("egress after the restart = %+v, want 1 restart and why", h)
	}
	if procAlive(pid) {
		t.Fatalf("the stopped egress %d is still alive", pid)
	}
	t.Logf("egress stopped at %s, replaced %s later", stoppedAt.Format(time.TimeOnly), time.Since(stoppedAt).Round(time.Second))
	tr = control.AutoReplyTest{}
	if err := json.Unmarshal([]byte(b.mustAnet("autoreply", "test", "--json")), &tr); err != nil || !tr.OK {
		t.Fatalf("anet autoreply test after the restart = %+v, %v, want ok", tr, err)
	}
}

// N1: below intake.disk_free_min strangers' tasks are refused with disk_low, known peers'
// below half of it; trusted peers keep a reserve. `anet status` warns disk_low.
func TestDiskLow(t *testing.T) {
	dir := t.TempDir()
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	free := int64(sfs.Bavail) * int64(sfs.Bsize)
	// Three times what is free: strangers (floor) and known peers (half of it) are below
	// it, trusted peers (a quarter) are not.
	r := newIntakeRig(t, fmt.Sprintf("intake:\n  disk_free_min: %d\n", 3*free))
	st := r.b.status()
	if !hasWarning(st, string(reasons.DiskLow)) {
		t.Fatalf("B's warnings = %+v, want %s", st.Warnings, reasons.DiskLow)
	}
	if out := r.b.mustAnet("status"); !strings.Contains(out, "disk_low") || !strings.Contains(out, "intake.disk_free_min") {
		t.Fatalf("anet status:\n%s\nwant the disk_low warning naming the setting", out)
	}
	stranger := newStranger(t)
	conn := dialNode(t, stranger, r.b, r.sb)
	sm, err := peer.Sign(stranger, peer.Message{Type: peer.TypeTask, ID: "m-1", From: stranger.AID(), To: r.sb.AID, Sent: time.Now(), Interaction: "ix-1", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := conn.Send(sm); err != nil || ack.Code != reasons.DiskLow || !peer.Transient(ack.Code) {
		t.Fatalf("stranger's task on a low disk = %+v, %v, want %s (transient)", ack, err, reasons.DiskLow)
	}
	// The trusted peer's task is accepted; the known peer's is refused and retried.
	if _, err := r.deliver(r.a, "trusted on a low disk", ctx(t).Done()); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(r.c.mustAnet("send", "--to", r.sb.AID, "known on a low disk"))
	testkit.WaitFor(t, "the known peer's task refused with disk_low", func() bool {
		l := r.c.show(id)
		return len(l) == 1 && len(l[0].Delivery) == 1 && strings.Contains(l[0].Delivery[0].LastError, string(reasons.DiskLow))
	})
	if d := r.c.show(id)[0].Delivery[0]; d.State != "pending" {
		t.Fatalf("known peer's delivery = %+v, want pending (retried later)", d)
	}
	if _, _, err := r.b.anet("show", id); err == nil {
		t.Fatal("the known peer's task was stored on a low disk")
	}
}
