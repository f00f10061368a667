// Package node is anetd: it loads the configuration and the node identity, opens the store,
// starts and supervises the two helpers (anet-sandboxd and anet-egress) over socketpairs,
// serves the control socket for the CLI, and stops all of it in order on SIGTERM/SIGINT.
//
// anetd holds the identity key and the store but never a model-service key: it passes the
// keys file's path to anet-egress and learns only which providers have a key. It never forks
// anything but the two helpers.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/metrics"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/store"
)

// Options are anetd's command-line settings.
type Options struct {
	// ConfigPath overrides the default config file when not empty.
	ConfigPath string
	// HelperDir holds anet-sandboxd and anet-egress; empty means the search of
	// pkg/helperpath (beside anetd, then ../libexec/anet).
	HelperDir string
	// Env reads the daemon's environment (os.Getenv in production).
	Env func(string) string
	// Version is printed in status.
	Version string
	// Engine answers new inbox tasks (the auto-reply engine); nil leaves them for the
	// operator.
	Engine peer.Engine
	// LogLevel, when set, is the level of the daemon's logger; a reload sets it.
	LogLevel *slog.LevelVar
	// WallEvery is how often anetd proves the wall by itself (S7): at start when the last
	// proof is that old, absent or another version's, then every WallEvery, and after a
	// reload that changes the sandbox's settings. Zero is a day; negative is never (anet
	// doctor --prove still proves it).
	WallEvery time.Duration
	// WallRetry is the wait after a failed proof, when shorter than WallEvery; zero is an
	// hour.
	WallRetry time.Duration
	// WallSettle is how long a start waits before its own proof when the last one did not
	// fail (or there is none); zero is ten minutes, never more than the interval.
	WallSettle time.Duration
}

// Node is a running anetd.
type Node struct {
	opts    Options
	paths   config.Paths
	id      *identity.Identity
	store   *store.Store
	log     *slog.Logger
	started time.Time

	sandboxd *privsep.Supervisor
	egress   *privsep.Supervisor
	peers    *peer.Service
	ar       autoReplier // the auto-reply engine; nil when not in the build or replaced
	metrics  *metrics.Metrics
	// control is the control API's server: the socket's, and the dashboard's in process.
	control *control.Server
	dash    dashState

	// warnings are set at start-up, before the control socket serves anyone, and only
	// read after that.
	warnings []control.Warning

	reloadMu sync.Mutex // one reload at a time

	wallState wallState

	mu         sync.Mutex // guards the fields that follow
	cfg        config.Config
	lastReload *control.ReloadState
	keys       *keysSeen
	// wall is the last proof of the wall, with every item; nil until the chain holds one.
	wall *control.WallProof
}

// Load reads the configuration and checks everything that must be right before anything
// starts (pkg/preflight): the config file, the socket paths and the keys file, by the same
// functions `anet doctor`, `anet config set` and the helpers use. Errors name the file, line
// and key, and carry the rule's reason code.
func Load(o Options) (config.Paths, config.Config, error) {
	return preflight.Run(context.Background(), preflight.Options{Env: o.Env, ConfigPath: o.ConfigPath, HelperDir: o.HelperDir})
}

// Run starts the node with what Load returned and blocks until ctx ends or SIGTERM/SIGINT
// arrives.
func Run(ctx context.Context, o Options, paths config.Paths, cfg config.Config, log *slog.Logger) error {
	if o.Env == nil {
		o.Env = os.Getenv
	}
	// anetd holds the identity key; a core file must never carry it to disk.
	if err := privsep.NoCoreDumps(); err != nil {
		return err
	}
	for _, d := range []string{paths.DataDir, paths.RuntimeDir, paths.CacheDir} {
		if err := config.EnsurePrivateDir(d); err != nil {
			return err
		}
	}
	// U2: one anetd per data dir and per runtime dir, decided before the identity, the
	// store, the chain, the token or the socket is touched.
	lock, err := lockInstance(paths)
	if err != nil {
		return err
	}
	defer lock.release()
	id, _, err := identity.LoadOrCreate(paths.IdentityKey())
	if err != nil {
		return err
	}
	st, err := store.Open(paths.Store())
	if err != nil {
		return err
	}
	n := &Node{opts: o, paths: paths, cfg: cfg, id: id, store: st, log: log, started: time.Now()}
	n.initMetrics()
	n.wallState.kick = make(chan string, 1)
	if w := rootWarnings(os.Geteuid()); len(w) > 0 {
		n.warnings = append(n.warnings, w...)
		log.Warn("anetd runs as root", "code", RunningAsRoot)
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	if _, err := st.Append(ctx, id, store.EntryInput{Kind: "node_started", Details: map[string]any{"version": o.Version, "pid": os.Getpid()}}); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	// The last proof of the wall decides the first sandboxed turns, before any new one.
	if err := n.loadWall(ctx); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP reloads (U3). Caught from here on, so one that comes during start-up waits for
	// the node to be ready instead of ending it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	// Helpers live only as long as this context; they also stop on their own when this
	// process dies, through EOF on their socket.
	hctx, hcancel := context.WithCancel(context.Background())
	defer hcancel()
	if err := n.startHelpers(hctx); err != nil {
		return err
	}
	// Every way out stops the helpers (and with them every run and endpoint) before the
	// store closes; Stop is idempotent, so the orderly path below may stop them first.
	defer n.stopHelpers()

	if err := n.startAutoReply(hctx); err != nil {
		return err
	}
	if err := n.startPeers(); err != nil {
		return err
	}
	defer n.peers.Close()
	go n.checkpoints(hctx)

	tok, err := control.NewToken()
	if err != nil {
		return err
	}
	if err := control.WriteToken(paths.ControlToken(), tok); err != nil {
		return err
	}
	defer os.Remove(paths.ControlToken())
	l, err := control.Listen(paths.ControlSocket())
	if err != nil {
		return err
	}
	srv := control.NewServer(tok, log)
	n.control = srv
	n.routes(srv)
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(l) }()
	// The dashboard reads the node through the same handlers, once they are all routed.
	n.applyDashboard(n.config().Dashboard)
	defer n.stopDashboard()

	go n.reloadOnHangup(ctx, hup)
	go n.warnSetup(hctx)
	go n.watchWall(hctx, n.wallEvery())
	log.Info("anetd ready", "aid", id.AID(), "config", paths.ConfigFile, "control", paths.ControlSocket(), "listen", n.listenAddr(), "pid", os.Getpid())
	if err := notifyReady(o.Env("NOTIFY_SOCKET")); err != nil {
		log.Warn("sd_notify READY=1 failed", "err", err)
	}

	select {
	case <-ctx.Done():
	case err := <-srvDone:
		if err != nil {
			log.Error("control socket failed", "err", err)
		}
	}
	log.Info("anetd stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.stopDashboard()
	srv.Shutdown(sctx)
	// No new peer messages while the node stops; deliveries in flight end here.
	n.peers.Close()
	// Helpers first: they end every run and endpoint; then the store records the stop.
	n.stopHelpers()
	if _, err := st.Append(sctx, id, store.EntryInput{Kind: "node_stopped", Details: map[string]any{"pid": os.Getpid()}}); err != nil {
		log.Error("evidence: node_stopped", "err", err)
	}
	return nil
}

func (n *Node) stopHelpers() {
	var wg sync.WaitGroup
	for _, s := range []*privsep.Supervisor{n.sandboxd, n.egress} {
		if s == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Stop(context.Background())
		}()
	}
	wg.Wait()
}

// wallEvery is Options.WallEvery, a test build's ANET_TEST_WALL_EVERY, or a day.
func (n *Node) wallEvery() time.Duration {
	if n.opts.Env != nil {
		if d, ok := testWallEvery(n.opts.Env); ok {
			return d
		}
	}
	if n.opts.WallEvery == 0 {
		return wallEvery
	}
	return n.opts.WallEvery
}
