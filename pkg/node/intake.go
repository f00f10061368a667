package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// diskWarning is the disk_low warning of `anet status` (N1): free space where the store
// lives is below intake.disk_free_min, so strangers' messages are being refused.
func (n *Node) diskWarning() (control.Warning, bool) {
	floor := n.config().Intake.DiskFreeMin
	if floor <= 0 {
		return control.Warning{}, false
	}
	free, err := n.store.FreeBytes()
	if errors.Is(err, errors.ErrUnsupported) {
		return control.Warning{}, false
	}
	detail := ""
	switch {
	case err != nil:
		detail = fmt.Sprintf("free space unknown (%v): strangers' messages are refused", err)
	case free < floor:
		detail = fmt.Sprintf("%d MiB free in %s, below intake.disk_free_min %s: strangers' messages are refused; known peers' below %s, trusted peers' below %s",
			free/limits.MiB, n.paths.DataDir, limits.Bytes(floor), limits.Bytes(floor/2), limits.Bytes(floor/4))
	default:
		return control.Warning{}, false
	}
	return control.Warning{Code: string(reasons.DiskLow), Text: reasons.Text(reasons.DiskLow), Detail: detail}, true
}

// checkpointEvery is how often the store's WAL is folded back and truncated.
const checkpointEvery = time.Minute

// checkpoints keeps the store's WAL bounded until ctx ends (N1).
func (n *Node) checkpoints(ctx context.Context) {
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := n.store.Checkpoint(ctx); err != nil && ctx.Err() == nil {
				n.log.Warn("store checkpoint", "err", err)
			}
		}
	}
}
