package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/remote"
	"anet.dev/anet/pkg/store"
)

// KindWallProved is the evidence entry of one proof of the wall (wallDetails).
const KindWallProved = "wall_proved"

const (
	// wallEvery is how old the last proof may get before anetd proves the wall again.
	wallEvery = 24 * time.Hour
	// wallRetry is the wait after a proof that failed: turns stay refused until one passes,
	// and what failed may have been passing trouble (a helper restarting).
	wallRetry = time.Hour
	// wallSettle is how long a start waits before its own proof (a fresh node's first, an
	// upgrade's, a day-old one's): the battery is a run of sandbox starts, and it must not
	// compete with the node's start-up and first tasks, which the helpers' probe already
	// guards. A failed last proof is proved again at once instead: it keeps sandboxed turns
	// closed until one passes.
	wallSettle = 10 * time.Minute
	// wallTimeout bounds one proof: the helpers prove in parallel, each within its own
	// bound (the longer is sandbox.SelfTestTimeout), and the control client waits five
	// minutes.
	wallTimeout = sandbox.SelfTestTimeout + 30*time.Second
	// wallDetailMax bounds each item's detail in the chain: a failure may quote a program.
	wallDetailMax = 512
)

// wallState is the node's proofs of the wall: one at a time, the last one kept.
type wallState struct {
	run  sync.Mutex  // held while a proof runs: one at a time
	kick chan string // why a proof is wanted now (a reload); watchWall takes it
}

// proveWall asks both helpers for their self-tests, in parallel, joins their checks
// (sandbox.NAME, egress.NAME) and appends one signed wall_proved entry (S7, S8). The proof
// becomes the last one, which decides whether sandboxed turns may start (wallVerdict): a
// failed proof closes them, a passing one opens them again. A proof that could not be recorded
// is kept all the same, and the error says why.
func (n *Node) proveWall(ctx context.Context, why string) (control.WallProof, error) {
	n.wallState.run.Lock()
	defer n.wallState.run.Unlock()
	ctx, cancel := context.WithTimeout(ctx, wallTimeout)
	defer cancel()
	sb := n.config().AutoReply.Sandbox
	lim := sandbox.Limits{Memory: sb.MemoryMax, Tasks: int64(sb.TasksMax), Disk: sb.DiskMax}
	var box, eg []check.Check
	var wg sync.WaitGroup
	wg.Go(func() {
		rep, err := remote.NewClient(n.sandboxd).SelfTest(ctx, lim)
		box = wallItems("sandbox", rep, err, sandboxFix)
	})
	wg.Go(func() {
		var rep check.Report
		_, err := n.egress.Call(ctx, egresswire.MethodSelfTest, nil, &rep)
		eg = wallItems("egress", rep, err, egressFix)
	})
	wg.Wait()
	if err := ctx.Err(); err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		// anetd is stopping: what the helpers answered says nothing of the wall.
		return control.WallProof{}, fmt.Errorf("proof of the wall cut short: %w", err)
	}
	p := newWallProof(time.Now().UTC(), why, n.wallTier(), n.opts.Version, append(box, eg...))
	// Recorded even when the caller has gone: the proof was made.
	e, err := n.store.Append(context.WithoutCancel(ctx), n.id, store.EntryInput{Kind: KindWallProved, Details: wallDetailsOf(p)})
	if err == nil {
		p.Seq, p.At = e.Seq, e.Time
	}
	n.mu.Lock()
	n.wall = &p
	n.mu.Unlock()
	if p.OK {
		n.log.Info("wall proved", "why", why, "tier", p.Tier, "items", len(p.Items), "seq", p.Seq)
	} else {
		n.log.Error("the wall's proof failed; sandboxed turns are refused until one passes", "code", reasons.WallUnproven, "why", why, "tier", p.Tier, "failed", strings.Join(p.Failed, ", "), "detail", unprovenDetail(p), "seq", p.Seq)
	}
	if err != nil {
		return p, fmt.Errorf("record the proof of the wall: %w", err)
	}
	return p, nil
}

// proveWallNow is POST /v1/wall/prove (`anet doctor --prove`): a proof made now, answered
// with every item. One already running is waited for first.
func (n *Node) proveWallNow(r *http.Request) (any, error) {
	// Once asked, the proof runs to its end (within wallTimeout) even if the CLI goes away:
	// one cut short would be a failed proof.
	return n.proveWall(context.WithoutCancel(r.Context()), control.WallManual)
}

// newWallProof is a proof of items, its verdict and failed items computed.
func newWallProof(at time.Time, why, tier, version string, items []check.Check) control.WallProof {
	p := control.WallProof{At: at, Why: why, Tier: tier, Version: version, Items: items, Failed: []string{}}
	if p.Items == nil {
		p.Items = []check.Check{}
	}
	p.OK = check.AllOK(p.Items)
	for _, c := range p.Items {
		if !c.OK {
			p.Failed = append(p.Failed, c.Name)
		}
	}
	return p
}

// Fixes of failed items that bring none of their own.
const (
	sandboxFix  = "anet-sandboxd self-test shows the battery on this host (run it as the node's user); once fixed, run anet doctor --prove"
	egressFix   = "anet-egress self-test shows the battery; once fixed, run anet doctor --prove"
	selfTestFix = "anet status shows the helper; once it runs, run anet doctor --prove"
)

// wallItems are one helper's checks as items of the proof, under group: each detail bounded,
// each failure with a fix. A self-test that could not run, or that reported nothing or failed
// without a failed check, is one failed item (group.self-test): the wall is not proved.
func wallItems(group string, rep check.Report, err error, fix string) []check.Check {
	fail := func(code reasons.Code, detail string) []check.Check {
		return []check.Check{{Name: group + ".self-test", Requirement: "S8", Code: code, Detail: reasons.Clip(detail, wallDetailMax), Fix: selfTestFix}}
	}
	switch {
	case err != nil:
		return fail(reasons.CodeOf(err), err.Error())
	case len(rep.Checks) == 0:
		return fail("", "the self-test reported no check")
	}
	out := make([]check.Check, 0, len(rep.Checks)+1)
	for _, c := range check.Prefixed(group, rep.Checks) {
		c.Detail = reasons.Clip(c.Detail, wallDetailMax)
		if !c.OK && c.Fix == "" {
			c.Fix = fix
		}
		out = append(out, c)
	}
	if !rep.OK && check.AllOK(out) {
		out = append(out, fail("", "the self-test failed without naming a failed check")...)
	}
	return out
}

// wallTier is the backend anet-sandboxd serves with, as its hello said, else the configured
// tier.
func (n *Node) wallTier() string {
	if b, ok := n.sandboxd.Status().Info["backend"].(string); ok && b != "" {
		return b
	}
	return string(n.config().AutoReply.Sandbox.Isolation)
}

// lastWall is the last proof (nil when there is none), with every item.
func (n *Node) lastWall() *control.WallProof {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wall == nil {
		return nil
	}
	p := *n.wall
	return &p
}

// wallVerdict is what the auto-reply engine asks before a sandboxed turn (autoreply.Options.Wall):
// nil while the last proof passed or none was made, else wall_unproven naming the first
// failed item and its fix.
func (n *Node) wallVerdict() *reasons.Error {
	p := n.lastWall()
	if p == nil || p.OK {
		return nil
	}
	return reasons.New(reasons.WallUnproven, unprovenDetail(*p))
}

// unprovenDetail names the first failed item of p, what it saw and its fix, and how many
// more failed.
func unprovenDetail(p control.WallProof) string {
	var first *check.Check
	for i := range p.Items {
		if !p.Items[i].OK {
			first = &p.Items[i]
			break
		}
	}
	when := p.At.UTC().Format(time.RFC3339)
	if first == nil {
		return "the proof of " + when + " failed"
	}
	d := first.Name + " failed"
	if first.Detail != "" {
		d += ": " + first.Detail
	}
	if n := len(p.Failed) - 1; n > 0 {
		d += " (and " + strconv.Itoa(n) + " more)"
	}
	d += "; proof of " + when + " (" + p.Why + ")"
	if first.Fix != "" {
		d += "; fix: " + first.Fix
	}
	return d
}

// wallStatus is the last proof as status shows it (its failed items only), and its warning
// while it stands failed.
func (n *Node) wallStatus() (*control.WallProof, []control.Warning) {
	full := n.lastWall()
	if full == nil {
		return nil, nil
	}
	p := *full
	p.Items = []check.Check{}
	for _, c := range full.Items {
		if !c.OK {
			p.Items = append(p.Items, c)
		}
	}
	if p.OK {
		return &p, nil
	}
	return &p, []control.Warning{{Code: string(reasons.WallUnproven), Text: reasons.Text(reasons.WallUnproven), Detail: unprovenDetail(*full)}}
}

// loadWall makes the chain's last wall_proved entry the last proof, at start: a failed proof
// keeps sandboxed turns closed across a restart. An entry that cannot be read is a failed
// proof.
func (n *Node) loadWall(ctx context.Context) error {
	e, ok, err := n.store.LastOf(ctx, KindWallProved)
	if err != nil {
		return fmt.Errorf("the last proof of the wall: %w", err)
	}
	if !ok {
		return nil
	}
	p, err := parseWallDetails(e.Details)
	if err != nil {
		p = newWallProof(e.Time, "", "", "", []check.Check{{Name: "wall.entry", Requirement: "S7",
			Detail: fmt.Sprintf("evidence entry %d cannot be read: %v", e.Seq, err), Fix: "run anet doctor --prove"}})
	}
	p.Seq, p.At = e.Seq, e.Time
	n.mu.Lock()
	n.wall = &p
	n.mu.Unlock()
	return nil
}

// wallReload asks for a proof now because a reload changed what the sandbox runs with; it
// never blocks the reload.
func (n *Node) wallReload() {
	select {
	case n.wallState.kick <- control.WallReload:
	default: // one is already asked for
	}
}

// wallDue is when the first proof after start is due, and why: at once when the chain holds
// none, the last failed (it keeps sandboxed turns closed until one passes) or is every old
// ("start"), or was made by another version of anetd ("upgrade"); else when it will be every
// old ("daily").
func wallDue(last *control.WallProof, version string, every time.Duration, now time.Time) (time.Duration, string) {
	switch {
	case last == nil:
		return 0, control.WallStart
	case last.Version != version:
		return 0, control.WallUpgrade
	case !last.OK:
		return 0, control.WallStart
	}
	age := now.Sub(last.At)
	if age >= every || age < 0 {
		return 0, control.WallStart
	}
	return every - age, control.WallDaily
}

// firstWallDue is wallDue after a start: a proof that is due waits until the start has
// settled, unless the last proof failed (wallSettle).
func firstWallDue(last *control.WallProof, version string, every, settle time.Duration, now time.Time) (time.Duration, string) {
	delay, why := wallDue(last, version, every, now)
	if last == nil || last.OK {
		delay = max(delay, min(every, settle))
	}
	return delay, why
}

// watchWall proves the wall when it is due (wallDue), every `every` after that (wallRetry
// after a failure, when that is sooner), and whenever a reload asks (wallReload), until ctx
// ends. It starts after the node is ready and waits for the helpers: the proof never holds up
// start-up, and the turns that arrive meanwhile go by the last proof in the chain.
func (n *Node) watchWall(ctx context.Context, every time.Duration) {
	if every <= 0 {
		return
	}
	delay, why := firstWallDue(n.lastWall(), n.opts.Version, every, cmp.Or(n.opts.WallSettle, wallSettle), time.Now())
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case why = <-n.wallState.kick:
			timer.Stop()
		}
		n.waitHelpers(ctx)
		if ctx.Err() != nil {
			return
		}
		p, err := n.proveWall(ctx, why)
		if err != nil {
			n.log.Error("proof of the wall", "err", err)
		}
		next := every
		if !p.OK {
			next = min(every, cmp.Or(n.opts.WallRetry, wallRetry))
		}
		timer.Reset(next)
		why = control.WallDaily
	}
}
