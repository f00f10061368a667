package autoreply

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/store"
)

// Evidence kinds the engine appends. A counted turn appends turn_completed and run_counted in
// one transaction, so the day's count is a plain Count of run_counted (B5) and a turn that
// never completed (a crash, B7) has nothing to count.
const (
	KindTurnStarted   = "turn_started"
	KindTurnCompleted = "turn_completed"
	KindRunCounted    = "run_counted"
	KindTurnRefused   = "turn_refused"
)

// DayBounds returns the local calendar day holding t: [start, end). The end is computed on the
// date (day+1 at 00:00), not by adding 24 hours, so 23- and 25-hour DST days are right; a day
// that starts inside a DST gap gets the time.Date normalisation (the first instant of the day).
// The zone is t's: anetd uses time.Local, read from TZ when the process starts, so a changed
// TZ takes effect at the next restart (and the counts, rebuilt from the chain, follow it).
func DayBounds(t time.Time) (start, end time.Time) {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location()), time.Date(y, m, d+1, 0, 0, 0, 0, t.Location())
}

// Ledger reads and writes the budget's entries in the evidence chain.
type Ledger struct {
	Store  *store.Store
	Signer store.Signer
}

// Spent returns what the counted runs in [from, to) cost, all peers when peer is "" (K2).
func (l Ledger) Spent(ctx context.Context, peer string, from, to time.Time) (money.Micros, error) {
	n, err := l.Store.Sum(ctx, store.CountFilter{Kinds: []string{KindRunCounted}, Peer: peer, From: from, To: to}, detailCost)
	return money.Micros(n), err
}

// SpentByPeer returns what the counted runs in [from, to) cost, per peer.
func (l Ledger) SpentByPeer(ctx context.Context, from, to time.Time) (map[string]money.Micros, error) {
	m, err := l.Store.SumByPeer(ctx, store.CountFilter{Kinds: []string{KindRunCounted}, From: from, To: to}, detailCost)
	out := make(map[string]money.Micros, len(m))
	for p, v := range m {
		out[p] = money.Micros(v)
	}
	return out, err
}

// Counted returns the counted runs in [from, to), all peers when peer is "".
func (l Ledger) Counted(ctx context.Context, peer string, from, to time.Time) (int, error) {
	n, err := l.Store.Count(ctx, store.CountFilter{Kinds: []string{KindRunCounted}, Peer: peer, From: from, To: to})
	return int(n), err
}

// Started records that a turn is about to start its agent (or model call).
func (l Ledger) Started(ctx context.Context, peer, interaction string, details map[string]any) error {
	_, err := l.Store.Append(ctx, l.Signer, store.EntryInput{Kind: KindTurnStarted, Peer: peer, Interaction: interaction, Details: details})
	return err
}

// Refused records a turn the node refused (or could not start) with the operator's code.
func (l Ledger) Refused(ctx context.Context, peer, interaction string, details map[string]any) error {
	_, err := l.Store.Append(ctx, l.Signer, store.EntryInput{Kind: KindTurnRefused, Peer: peer, Interaction: interaction, Details: details})
	return err
}

// Completed records the end of a turn; counted turns get their run_counted entry in the same
// transaction, so the count and the completion exist together or not at all. A run's
// receipts (rc, nil for none) are stored in that transaction too, under details["run"], and
// the entry carries their digest and counts under "receipts" (H1–H7, R1, K1): a crash keeps
// the entry and its receipts, or neither.
func (l Ledger) Completed(ctx context.Context, peer, interaction string, counted bool, details map[string]any, rc *RunReceipts) error {
	if details == nil {
		details = map[string]any{}
	}
	details["counted"] = counted
	run, _ := details["run"].(string)
	if rc != nil {
		if run == "" {
			return fmt.Errorf("record turn: receipts without a run id")
		}
		details[usageReceipts] = receipt.CountsOf(rc.Set, rc.Encoded)
	}
	tx, err := l.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record turn: begin: %w", err)
	}
	defer tx.Rollback()
	e, err := l.Store.AppendTx(ctx, tx, l.Signer, store.EntryInput{Kind: KindTurnCompleted, Peer: peer, Interaction: interaction, Details: details})
	if err != nil {
		return err
	}
	if rc != nil {
		if _, err := l.Store.PutReceiptsTx(ctx, tx, store.ReceiptsInput{Run: run, Peer: peer, Interaction: interaction, Seq: e.Seq, Body: rc.Encoded}); err != nil {
			return fmt.Errorf("record turn: %w", err)
		}
	}
	if counted {
		if err := appendCounted(ctx, l, tx, peer, interaction, details); err != nil {
			return err
		}
	}
	if err := l.Store.Commit(tx); err != nil {
		return fmt.Errorf("record turn: commit: %w", err)
	}
	return nil
}

// appendCounted records the counted run with its tokens and cost, the day's budget entries
// (B5, K1): the sum of their cost_micros is the day's spend.
func appendCounted(ctx context.Context, l Ledger, tx *sql.Tx, peer, interaction string, details map[string]any) error {
	d := map[string]any{"run": details["run"]}
	for _, k := range countedSpendKeys {
		if v, ok := details[k]; ok {
			d[k] = v
		}
	}
	_, err := l.Store.AppendTx(ctx, tx, l.Signer, store.EntryInput{Kind: KindRunCounted, Peer: peer, Interaction: interaction, Details: d})
	return err
}
