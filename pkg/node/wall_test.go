package node

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/helperpath"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/reasons"
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
