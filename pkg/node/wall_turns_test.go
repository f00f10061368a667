//go:build !noautoreply

package node

// The proof of the wall closes and reopens sandboxed turns: only a build with auto-reply has
// them (C5), so these tests are left out of the noautoreply build.

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/doctor"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/store"
)

// answers is what the requesters were told.
type answers struct {
	mu      sync.Mutex
	replies map[string]string
	refused map[string]reasons.Code
}

func (a *answers) Reply(_ context.Context, _, ix, text string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.replies[ix] = text
	return nil
}

func (a *answers) Refuse(_ context.Context, _, ix string, code reasons.Code, _ time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused[ix] = code
	return nil
}

// turn hands n a stranger's task (an untrusted peer: sandboxed) and returns what the
// requester was told.
func turn(t *testing.T, n *Node, ix string) (reply string, refused reasons.Code) {
	t.Helper()
	peerID, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	a := &answers{replies: map[string]string{}, refused: map[string]reasons.Code{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n.ar.HandleTask(ctx, peerTask(peerID.AID(), ix), a)
	return a.replies[ix], a.refused[ix]
}

// refusedFor is the operator's reason and detail of the turn_refused entry of ix.
func refusedFor(t *testing.T, st *store.Store, ix string) (reason, detail string) {
	t.Helper()
	es, err := st.List(context.Background(), store.ListOptions{Kind: "turn_refused", Interaction: ix})
	if err != nil || len(es) != 1 {
		t.Fatalf("turn_refused entries of %s = %d, %v; want 1", ix, len(es), err)
	}
	var d struct{ Reason, Detail string }
	if err := json.Unmarshal(es[0].Details, &d); err != nil {
		t.Fatal(err)
	}
	return d.Reason, d.Detail
}

// wallEntries are the chain's wall_proved entries, after checking that the whole chain
// S7, S8, F1, F2, H4, R1: a proof of the wall runs both helpers' self-tests for real and
// appends exactly one signed wall_proved entry with every item. The failure is real: the
// sandbox comes from a test build of anet-sandboxd with its socket-family filter left out, a
// hole the five-property probe does not look for (so the probe alone passes) and the attack
// battery does (af_vsock). While that proof stands, a stranger's turn is refused with
// sandbox_unavailable, and the operator sees wall_unproven with the item and its fix in
// status, in doctor and in the chain; a restart on a sound sandbox reads the failed proof back
// and keeps turns closed; a passing proof opens them again, and the turn runs in the sandbox.
func TestWallProofClosesAndReopensSandboxedTurnsS7(t *testing.T) {
	h := newWallHost(t, "")
	t.Setenv("PATH", h.agent+":"+os.Getenv("PATH")) // anetd's PATH finds the agent
	egress := h.egress(t)
	ctx := context.Background()

	weak := h.node(t, "v1", h.sandboxd(t, "omit:socket"), egress)
	p, err := weak.proveWall(ctx, control.WallManual)
	if err != nil {
		t.Fatal(err)
	}
	if p.OK || !slices.Contains(p.Failed, "sandbox.attack.af_vsock") || p.Why != "manual" || p.Tier != "bwrap" || p.Version != "v1" || p.Seq == 0 {
		t.Fatalf("proof of the weakened sandbox = ok %v, failed %v, why %q, tier %q, version %q, seq %d; want af_vsock failed, recorded",
			p.OK, p.Failed, p.Why, p.Tier, p.Version, p.Seq)
	}
	var probes, attacks, egressItems int
	for _, it := range p.Items {
		switch {
		case strings.HasPrefix(it.Name, "sandbox.probe."):
			probes++
		case strings.HasPrefix(it.Name, "sandbox.attack."):
			attacks++
		case strings.HasPrefix(it.Name, "egress."):
			egressItems++
			if !it.OK {
				t.Errorf("egress item failed: %+v", it)
			}
		default:
			t.Errorf("item %q is neither the sandbox's nor the endpoint's", it.Name)
		}
	}
	if probes != 5 || attacks != len(attack.Names()) || egressItems < 20 {
		t.Fatalf("proof items: %d probe, %d attack, %d egress; want 5, %d and every egress check", probes, attacks, egressItems, len(attack.Names()))
	}
	es := wallEntries(t, h)
	if len(es) != 1 || es[0].Seq != p.Seq {
		t.Fatalf("wall_proved entries = %d, want exactly the proof's one (seq %d)", len(es), p.Seq)
	}
	var d struct {
		OK                 bool
		Why, Tier, Version string
		Items              []map[string]any
	}
	if err := json.Unmarshal(es[0].Details, &d); err != nil {
		t.Fatal(err)
	}
	if d.OK || d.Why != "manual" || d.Tier != "bwrap" || d.Version != "v1" || len(d.Items) != len(p.Items) {
		t.Fatalf("wall_proved details = ok %v why %q tier %q version %q, %d items; want the proof's %d", d.OK, d.Why, d.Tier, d.Version, len(d.Items), len(p.Items))
	}
	for i, it := range d.Items {
		if it["name"] != p.Items[i].Name || it["ok"] != p.Items[i].OK || it["detail"] == nil {
			t.Fatalf("entry item %d = %v, want %s with ok and detail", i, it, p.Items[i].Name)
		}
	}

	// The probe passes (the hole is not one of its five), the proof does not: closed.
	reply, refused := turn(t, weak, "ix-weak")
	if refused != reasons.SandboxUnavailable || reply != "" {
		t.Fatalf("turn on the unproven wall: reply %q, refused %q; want %s", reply, refused, reasons.SandboxUnavailable)
	}
	reason, detail := refusedFor(t, h.st, "ix-weak")
	if reason != string(reasons.WallUnproven) || !strings.Contains(detail, "sandbox.attack.af_vsock") || !strings.Contains(detail, "fix: ") {
		t.Fatalf("operator's reason %q (%s), want wall_unproven naming the item and its fix", reason, detail)
	}
	st := weak.status()
	if !st.AutoReply.Sandbox.OK {
		t.Fatalf("probe in status = %+v: the weakened sandbox's probe should pass, so that the proof is what closes it", st.AutoReply.Sandbox)
	}
	if st.Wall == nil || st.Wall.OK || !slices.Contains(st.Wall.Failed, "sandbox.attack.af_vsock") || len(st.Wall.Items) != len(st.Wall.Failed) {
		t.Fatalf("status wall = %+v, want the failed proof with its failed items", st.Wall)
	}
	if w := warning(st, reasons.WallUnproven); w == nil || !strings.Contains(w.Detail, "sandbox.attack.af_vsock") {
		t.Fatalf("status warnings = %+v, want wall_unproven naming the item", st.Warnings)
	}
	if c := doctor.WallCheck(st.Wall); c.OK || c.Code != reasons.WallUnproven || !strings.Contains(c.Detail, "sandbox.attack.af_vsock") || c.Fix == "" {
		t.Fatalf("doctor's node.wall = %+v, want a failure naming the item, with its fix", c)
	}

	// anetd restarts on a sound sandbox: the failed proof is read back, turns stay closed.
	sound := h.node(t, "v1", h.sandboxd(t, ""), egress)
	if last := sound.lastWall(); last == nil || last.OK || last.Seq != p.Seq || len(last.Items) != len(p.Items) {
		t.Fatalf("proof read back at start = %+v, want the failed one (seq %d)", last, p.Seq)
	}
	if delay, why := wallDue(sound.lastWall(), "v1", time.Hour, time.Now()); delay != 0 || why != control.WallStart {
		t.Fatalf("after a failed proof the next is due in %s (%s), want at start", delay, why)
	}
	if _, refused := turn(t, sound, "ix-restart"); refused != reasons.SandboxUnavailable {
		t.Fatalf("turn after a restart over a failed proof: refused %q, want %s", refused, reasons.SandboxUnavailable)
	}
	if reason, _ := refusedFor(t, h.st, "ix-restart"); reason != string(reasons.WallUnproven) {
		t.Fatalf("operator's reason after the restart %q, want wall_unproven", reason)
	}

	// A passing proof opens them again.
	p2, err := sound.proveWall(ctx, control.WallManual)
	if err != nil || !p2.OK || len(p2.Failed) != 0 {
		t.Fatalf("proof of the sound sandbox = ok %v failed %v, %v", p2.OK, p2.Failed, err)
	}
	if es := wallEntries(t, h); len(es) != 2 || es[1].Seq != p2.Seq {
		t.Fatalf("wall_proved entries = %d, want 2", len(es))
	}
	if reply, refused := turn(t, sound, "ix-sound"); reply != "answered behind a proved wall" || refused != "" {
		t.Fatalf("turn after a passing proof: reply %q, refused %q; want the agent's answer", reply, refused)
	}
	st = sound.status()
	if st.Wall == nil || !st.Wall.OK || len(st.Wall.Items) != 0 || warning(st, reasons.WallUnproven) != nil {
		t.Fatalf("status after a passing proof: wall %+v, warnings %+v", st.Wall, st.Warnings)
	}
	if c := doctor.WallCheck(st.Wall); !c.OK || !strings.Contains(c.Detail, "manual, tier bwrap") {
		t.Fatalf("doctor's node.wall = %+v, want a pass naming why and the tier", c)
	}
}

func peerTask(aid, ix string) peer.Task {
	return peer.Task{Peer: aid, Interaction: ix, Text: "what is behind the wall?"}
}
