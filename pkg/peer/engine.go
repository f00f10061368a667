package peer

import (
	"context"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// Task is a new inbound task as the auto-reply engine sees it.
type Task struct {
	Peer        string // the requester's aid, authenticated
	Interaction string
	Text        string // attacker-written when the peer is not trusted
	Sent        time.Time
	Received    time.Time
	Trusted     bool // the peer is in the trust list
}

// Responder answers inbound tasks. Each interaction gets at most one answer: a second one
// fails with an error wrapping store.ErrAlreadyAnswered.
type Responder interface {
	Reply(ctx context.Context, peer, interaction, text string) error
	// Refuse sends a refusal with a code from pkg/reasons (sandbox_unavailable, budget, …);
	// until is the end of the local day for budget and zero otherwise.
	Refuse(ctx context.Context, peer, interaction string, code reasons.Code, until time.Time) error
}

// Engine is the auto-reply engine's seam: the node calls HandleTask once for each new
// inbox task (and, after a restart, for every task still new), in its own goroutine. An
// engine that does not answer leaves the task in the inbox for the operator; with no
// engine every task waits there.
type Engine interface {
	HandleTask(ctx context.Context, t Task, r Responder)
}
