package autoreply

import (
	"context"
	"log/slog"
	"time"

	"anet.dev/anet/pkg/linksafe"
)

// SweepInterval is how often work dirs past their retention are removed (S3).
const SweepInterval = time.Hour

// SweepWork removes work dirs whose retention has passed, in both work roots, now and then
// every SweepInterval until ctx ends.
func (e *Engine) SweepWork(ctx context.Context) {
	for {
		set := e.current()
		sweepWork([]string{e.o.Dirs.SandboxWork, set.DirectWork, e.o.Dirs.RunLogs}, set.Config.WorkRetention, e.o.Now(), e.log)
		select {
		case <-ctx.Done():
			return
		case <-time.After(SweepInterval):
		}
	}
}

// sweepWork removes <root>/<aid>/<interaction> dirs older than retention in each root and
// returns how many it removed.
func sweepWork(roots []string, retention time.Duration, now time.Time, log *slog.Logger) int {
	n := 0
	for _, root := range roots {
		if root == "" {
			continue
		}
		removed, err := linksafe.RemoveExpired(root, retention, now)
		if err != nil {
			log.Warn("work retention sweep", "root", root, "err", err)
		}
		if len(removed) > 0 {
			log.Info("work dirs past retention removed", "root", root, "count", len(removed))
		}
		n += len(removed)
	}
	return n
}
