package node

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/doctor"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/store"
)

// wallHost is one node's directories, store and key, made the way anetd makes them, for nodes
// that are started (and restarted) over it with real helpers.
type wallHost struct {
	env   map[string]string
	paths config.Paths
	cfg   config.Config
	st    *store.Store
	id    *identity.Identity
	agent string // the directory of the stand-in agent program
}

func newWallHost(t *testing.T, configYAML string) *wallHost {
	t.Helper()
	// Short: the runs' endpoint sockets live under it and a unix socket path is short.
	dir, err := os.MkdirTemp("", "aw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &wallHost{env: map[string]string{
		"HOME": filepath.Join(dir, "home"), "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "XDG_DATA_HOME": filepath.Join(dir, "data"),
		"XDG_CACHE_HOME": filepath.Join(dir, "cache"), "XDG_RUNTIME_DIR": filepath.Join(dir, "run"),
	}, agent: filepath.Join(dir, "agent")}
	paths, err := config.DefaultPaths(h.getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{paths.ConfigDir, paths.DataDir, paths.RuntimeDir, paths.CacheDir} {
		if err := config.EnsurePrivateDir(d); err != nil {
			t.Fatal(err)
		}
	}
	h.writeConfig(t, configYAML)
	if err := os.WriteFile(paths.KeysFile, []byte("anthropic: sk-ant-wall-test-4c1d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The stand-in for claude: Claude Code's answer, printed from inside the sandbox.
	if err := os.MkdirAll(h.agent, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf '%s\\n' '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"answered behind a proved wall\"}'\n"
	if err := os.WriteFile(filepath.Join(h.agent, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// anetd's own checks at start, as it runs them (anet-egress check among them).
	h.paths, h.cfg, err = preflight.Run(context.Background(), preflight.Options{Env: h.getenv, HelperDir: testharness.BinDir()})
	if err != nil {
		t.Fatal(err)
	}
	if h.st, err = store.Open(h.paths.Store()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.st.Close() })
	if h.id, _, err = identity.LoadOrCreate(h.paths.IdentityKey()); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *wallHost) getenv(k string) string { return h.env[k] }

func (h *wallHost) writeConfig(t *testing.T, yaml string) {
	t.Helper()
	p := filepath.Join(h.env["XDG_CONFIG_HOME"], "anet", "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startHelper starts a built helper as anetd does: an environment built from nothing (the
// helpers' PATH and locale) plus extra.
func startHelper(t *testing.T, name, bin string, args []string, extra ...string) *privsep.Supervisor {
	t.Helper()
	sup := privsep.StartHelper(context.Background(), privsep.HelperSpec{
		Name: name, Path: testharness.Bin(t, bin), Args: args, Env: append(helperpath.Env(), extra...),
	}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { sup.Stop(context.Background()) })
	if !testkit.Until(testkit.Wait, func() bool { return sup.Status().State == privsep.StateRunning }) {
		t.Fatalf("%s not running: %+v", name, sup.Status())
	}
	return sup
}

// sandboxd is anet-sandboxd serving; weaken, when set, opens that hole in its sandbox (a test
// build's ANET_UNSAFE_TEST_WEAKEN).
func (h *wallHost) sandboxd(t *testing.T, weaken string) *privsep.Supervisor {
	args := append([]string{"serve"}, h.cfg.AutoReply.Sandbox.LauncherArgs(h.paths)...)
	if weaken == "" {
		return startHelper(t, "sandboxd", "anet-sandboxd", args)
	}
	return startHelper(t, "sandboxd", "anet-sandboxd-weak", args, "ANET_UNSAFE_TEST_WEAKEN="+weaken)
}

func (h *wallHost) egress(t *testing.T) *privsep.Supervisor {
	return startHelper(t, "egress", "anet-egress", []string{"serve", "--keys", h.paths.KeysFile, "--runs-dir", h.paths.RunsDir()})
}

// node is anetd over h with these helpers, as Run builds it up to serving: the last proof
// read back from the chain, the auto-reply engine wired to the helpers.
func (h *wallHost) node(t *testing.T, version string, sandboxd, egress *privsep.Supervisor) *Node {
	t.Helper()
	n := &Node{opts: Options{Env: h.getenv, HelperDir: testharness.BinDir(), Version: version, WallSettle: time.Millisecond}, paths: h.paths, cfg: h.cfg,
		id: h.id, store: h.st, log: slog.New(slog.DiscardHandler), started: time.Now(), sandboxd: sandboxd, egress: egress}
	n.wallState.kick = make(chan string, 1)
	ctx := context.Background()
	if err := n.loadWall(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.startAutoReply(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

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
// verifies under the node's key.
func wallEntries(t *testing.T, h *wallHost) []store.Entry {
	t.Helper()
	ctx := context.Background()
	if _, err := h.st.Verify(ctx, h.id.Public()); err != nil {
		t.Fatalf("the chain does not verify: %v", err)
	}
	es, err := h.st.List(ctx, store.ListOptions{Kind: KindWallProved})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

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

func warning(st control.Status, code reasons.Code) *control.Warning {
	for i := range st.Warnings {
		if st.Warnings[i].Code == string(code) {
			return &st.Warnings[i]
		}
	}
	return nil
}

// S7: anetd proves the wall by itself without holding up anything: once the start has settled
// (shortened here) when the chain holds no proof, then every interval (shortened too); a start
// by another version of anetd proves it once settled, not a day later ("upgrade"); a reload that changes the sandbox's limits proves it ("reload").
func TestWallProvedOnScheduleS7(t *testing.T) {
	h := newWallHost(t, "")
	sandboxd, egress := h.sandboxd(t, ""), h.egress(t)
	whys := func() []string {
		var out []string
		for _, e := range wallEntries(t, h) {
			var d struct{ Why string }
			json.Unmarshal(e.Details, &d)
			out = append(out, d.Why)
		}
		return out
	}
	watch := func(n *Node, every time.Duration) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); n.watchWall(ctx, every) }()
		return func() { cancel(); <-done }
	}

	n := h.node(t, "v1", sandboxd, egress)
	stop := watch(n, 500*time.Millisecond)
	testkit.WaitFor(t, "a proof at start, then a daily one", func() bool { return len(whys()) >= 2 })
	stop()
	if got := whys(); got[0] != control.WallStart || got[1] != control.WallDaily {
		t.Fatalf("proofs made %v, want start then daily", got)
	}
	if p := n.status().Wall; p == nil || !p.OK || p.Version != "v1" {
		t.Fatalf("status wall = %+v, want the last proof, passed", p)
	}

	// Another version starts: it proves once settled, not a day later.
	before := len(whys())
	up := h.node(t, "v2", sandboxd, egress)
	stop = watch(up, time.Hour)
	testkit.WaitFor(t, "a proof by the upgraded anetd", func() bool { return len(whys()) > before })
	if got := whys(); got[before] != control.WallUpgrade {
		t.Fatalf("proofs made %v, want upgrade after %d", got, before)
	}

	// A reload that changes nothing of the sandbox proves nothing; one that changes its
	// memory limit does.
	before = len(whys())
	h.writeConfig(t, "auto_reply:\n  sandbox:\n    runs_per_day: 7\n")
	if _, err := up.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.writeConfig(t, "auto_reply:\n  sandbox:\n    runs_per_day: 7\n    memory_max: 1GiB\n")
	if _, err := up.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "a proof after the reload", func() bool { return len(whys()) > before })
	stop()
	if got := whys(); len(got) != before+1 || got[before] != control.WallReload {
		t.Fatalf("proofs made %v, want exactly one more, for the reload", got)
	}
}

// S7: the first proof after a start is due at once when there is none, the last failed, is a
// day old or was made by another version; else when the last turns a day old.
func TestWallDueS7(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	settle := 10 * time.Minute
	for _, c := range []struct {
		name  string
		last  *control.WallProof
		delay time.Duration
		why   string
		// first is the delay after a start: a due proof waits until the start settled,
		// unless the last one failed.
		first time.Duration
	}{
		{"none", nil, 0, control.WallStart, settle},
		{"a fresh pass", &control.WallProof{OK: true, Version: "v1", At: now.Add(-time.Hour)}, 23 * time.Hour, control.WallDaily, 23 * time.Hour},
		{"a day old", &control.WallProof{OK: true, Version: "v1", At: now.Add(-day)}, 0, control.WallStart, settle},
		{"from the future", &control.WallProof{OK: true, Version: "v1", At: now.Add(time.Hour)}, 0, control.WallStart, settle},
		{"failed", &control.WallProof{OK: false, Version: "v1", At: now.Add(-time.Minute)}, 0, control.WallStart, 0},
		{"another version", &control.WallProof{OK: true, Version: "v0", At: now.Add(-time.Minute)}, 0, control.WallUpgrade, settle},
	} {
		if delay, why := wallDue(c.last, "v1", day, now); delay != c.delay || why != c.why {
			t.Errorf("%s: due in %s (%s), want %s (%s)", c.name, delay, why, c.delay, c.why)
		}
		if delay, why := firstWallDue(c.last, "v1", day, settle, now); delay != c.first || why != c.why {
			t.Errorf("%s: after a start due in %s (%s), want %s (%s)", c.name, delay, why, c.first, c.why)
		}
	}
}

// S7, U3: the reloads that change what a sandboxed turn runs under are the ones that ask for
// a new proof.
func TestSandboxChangedS7(t *testing.T) {
	old := config.Default()
	for _, c := range []struct {
		name string
		edit func(*config.Config)
		want bool
	}{
		{"nothing", func(*config.Config) {}, false},
		{"runs per day", func(c *config.Config) { c.AutoReply.Sandbox.RunsPerDay++ }, false},
		{"egress allow", func(c *config.Config) { c.AutoReply.EgressAllow = []string{"pypi.org"} }, false},
		{"memory", func(c *config.Config) { c.AutoReply.Sandbox.MemoryMax /= 2 }, true},
		{"tasks", func(c *config.Config) { c.AutoReply.Sandbox.TasksMax++ }, true},
		{"disk", func(c *config.Config) { c.AutoReply.Sandbox.DiskMax /= 2 }, true},
		{"wall clock", func(c *config.Config) { c.AutoReply.APITimeout++ }, true},
		{"agent", func(c *config.Config) { c.AutoReply.Agent = config.AgentCodex }, true},
		{"tier", func(c *config.Config) { c.AutoReply.Sandbox.Isolation = config.IsolationVM }, true},
	} {
		next := old
		c.edit(&next)
		if got := sandboxChanged(old, next); got != c.want {
			t.Errorf("%s: sandboxChanged = %v, want %v", c.name, got, c.want)
		}
	}
}

// S7, F1, N2: a helper that cannot prove its part fails the proof with an item saying why,
// and the proof is recorded all the same: here anet-sandboxd finds no bwrap (its probe and
// battery fail with no_bwrap) and anet-egress is down (egress.self-test: helper_down).
func TestWallProofFailsWhenAHelperCannotProveS7(t *testing.T) {
	h := newWallHost(t, "")
	args := append([]string{"serve"}, h.cfg.AutoReply.Sandbox.LauncherArgs(h.paths)...)
	noBwrap := startHelper(t, "sandboxd", "anet-sandboxd", args, "PATH="+t.TempDir())
	egress := h.egress(t)
	egress.Stop(context.Background())
	n := h.node(t, "v1", noBwrap, egress)
	p, err := n.proveWall(context.Background(), control.WallManual)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]reasons.Code{}
	for _, it := range p.Items {
		if !it.OK {
			byName[it.Name] = it.Code
			if it.Fix == "" {
				t.Errorf("failed item %s has no fix", it.Name)
			}
		}
	}
	if p.OK || byName["egress.self-test"] != reasons.HelperDown || byName["sandbox.attack.battery"] != reasons.NoBwrap {
		t.Fatalf("proof = ok %v, failed items %v; want the battery's no_bwrap and egress.self-test helper_down", p.OK, byName)
	}
	if es := wallEntries(t, h); len(es) != 1 || es[0].Seq != p.Seq {
		t.Fatalf("wall_proved entries = %d, want the failed proof's one", len(es))
	}
	if re := n.wallVerdict(); re == nil || re.Code != reasons.WallUnproven {
		t.Fatalf("verdict = %v, want wall_unproven", re)
	}
}
