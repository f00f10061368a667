package node

import (
	"context"
	"encoding/json"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/store"
)

// runsOf reads the runs the node made for a received task from its turn_completed evidence:
// route, count, model, tokens and cost (K1), and each run's receipts from the store, checked
// against the digest its entry names (H1–H7, R1). The chain is the record; nothing else
// keeps it.
func (n *Node) runsOf(ctx context.Context, peer, interaction string) []control.Run {
	entries, err := n.store.List(ctx, store.ListOptions{Kind: "turn_completed", Peer: peer, Interaction: interaction})
	if err != nil {
		n.log.Warn("runs of an interaction", "err", err)
		return nil
	}
	var (
		out    []control.Run
		claims []receiptsClaim
	)
	for _, e := range entries {
		var d struct {
			Run          string        `json:"run"`
			Route        string        `json:"route"`
			Counted      bool          `json:"counted"`
			Model        string        `json:"model"`
			Tokens       *money.Tokens `json:"tokens"`
			Cost         money.Micros  `json:"cost_micros"`
			UsageMissing int64         `json:"usage_missing"`
			SpendUnknown bool          `json:"spend_unknown"`
		}
		if json.Unmarshal(e.Details, &d) != nil {
			continue
		}
		r := control.Run{Run: d.Run, At: e.Time, Route: d.Route, Counted: d.Counted, Model: d.Model,
			Cost: d.Cost, UsageMissing: d.UsageMissing, SpendUnknown: d.SpendUnknown, Metered: d.Tokens != nil}
		if d.Tokens != nil {
			r.Tokens = *d.Tokens
		}
		out = append(out, r)
		claims = append(claims, claimOf(e))
	}
	n.fillReceipts(ctx, peer, interaction, out, claims)
	return out
}

// refusalReason is the operator's reason for the last refusal this node sent for a task, from
// its turn_refused evidence (F2): the requester was told only sandbox_unavailable or budget.
func (n *Node) refusalReason(ctx context.Context, peer, interaction string) (reason, detail string) {
	entries, err := n.store.List(ctx, store.ListOptions{Kind: "turn_refused", Peer: peer, Interaction: interaction})
	if err != nil {
		n.log.Warn("refusal reason of an interaction", "err", err)
		return "", ""
	}
	if len(entries) == 0 {
		return "", ""
	}
	var d struct {
		Reason string `json:"reason"`
		Detail string `json:"detail"`
	}
	if json.Unmarshal(entries[len(entries)-1].Details, &d) != nil {
		return "", ""
	}
	return d.Reason, d.Detail
}
