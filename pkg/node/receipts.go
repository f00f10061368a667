package node

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/receipt"
	"anet.dev/anet/pkg/store"
)

// exportPage is how many entries the export reads at once: memory stays bounded by a page
// (and its receipts), however long the chain.
const exportPage = 256

// Why a run that should have receipts shows none (control.Run.ReceiptsError).
const (
	receiptsNeverArrived = "the run's endpoint reported no readable receipts"
	receiptsNotStored    = "the receipts the chain names are missing from the store (anet evidence verify)"
	receiptsChanged      = "the stored receipts do not match the chain's digest (anet evidence verify)"
)

// receiptsClaim is what a turn_completed entry's details say of its run's receipts.
type receiptsClaim struct {
	Run      string          `json:"run"`
	Counts   *receipt.Counts `json:"receipts"`
	Missing  bool            `json:"receipts_missing"`
	hasClaim bool
}

func claimOf(e store.Entry) receiptsClaim {
	var c receiptsClaim
	if e.Kind != "turn_completed" || json.Unmarshal(e.Details, &c) != nil {
		return receiptsClaim{}
	}
	c.hasClaim = c.Counts != nil && c.Counts.Digest != ""
	return c
}

// checkedReceipts returns the stored body as a set if it is the one the chain names: its
// digest is the entry's. What the store holds is not taken on trust (a file edit changes it;
// Verify names such an entry).
func checkedReceipts(body []byte, digest string) (*receipt.Set, error) {
	if receipt.Digest(body) != digest {
		return nil, errors.New(receiptsChanged)
	}
	set, err := receipt.Decode(body)
	if err != nil {
		return nil, fmt.Errorf("the stored receipts do not decode: %w", err)
	}
	return &set, nil
}

// fillReceipts gives an interaction's runs their receipts (`anet show`); claims are what the
// runs' turn_completed entries say of them, in the same order.
func (n *Node) fillReceipts(ctx context.Context, peer, interaction string, runs []control.Run, claims []receiptsClaim) {
	var (
		stored  map[string]store.StoredReceipts
		readErr error
		loaded  bool
	)
	for i, c := range claims {
		if !c.hasClaim {
			if c.Missing {
				runs[i].ReceiptsError = receiptsNeverArrived
			}
			continue
		}
		if !loaded {
			// One read for the interaction, not one per run.
			if stored, readErr = n.store.ReceiptsOf(ctx, peer, interaction); readErr != nil {
				n.log.Warn("receipts of an interaction", "err", readErr)
			}
			loaded = true
		}
		counts := *c.Counts
		runs[i].ReceiptCounts = &counts
		sr, ok := stored[c.Run]
		switch {
		case readErr != nil:
			runs[i].ReceiptsError = "the receipts could not be read: " + readErr.Error()
		case !ok:
			runs[i].ReceiptsError = receiptsNotStored
		default:
			set, err := checkedReceipts(sr.Body, counts.Digest)
			if err != nil {
				runs[i].ReceiptsError = err.Error()
				continue
			}
			runs[i].Receipts = set
		}
	}
}

// exportEvidence streams the whole chain, up to its head when the export began, one entry per
// event and each run's receipts inline (GET /v1/evidence/export, `anet evidence export`). It
// pages through the store, so the chain is never held whole.
func (n *Node) exportEvidence(r *http.Request, emit func(any) error) (any, error) {
	ctx := r.Context()
	head, ok, err := n.store.Last(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return control.ExportResult{}, nil
	}
	res := control.ExportResult{HeadSeq: head.Seq, Head: hex.EncodeToString(head.Hash[:])}
	for after := int64(0); after < head.Seq; {
		page, err := n.store.List(ctx, store.ListOptions{After: after, Through: head.Seq, Limit: exportPage})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			line := control.ExportEntry{EvidenceEntry: evidenceJSON(e)}
			if c := claimOf(e); c.hasClaim {
				line.Receipts, line.ReceiptsError = n.runReceipts(ctx, c)
			}
			if err := emit(line); err != nil {
				return nil, fmt.Errorf("export evidence: entry %d: %w", e.Seq, err)
			}
			res.Entries++
		}
		after = page[len(page)-1].Seq
	}
	return res, nil
}

// runReceipts reads one run's receipts and checks them against the digest its entry names.
func (n *Node) runReceipts(ctx context.Context, c receiptsClaim) (*receipt.Set, string) {
	body, _, err := n.store.Receipts(ctx, c.Run)
	if errors.Is(err, store.ErrNoReceipts) {
		return nil, receiptsNotStored
	}
	if err != nil {
		return nil, "the receipts could not be read: " + err.Error()
	}
	set, err := checkedReceipts(body, c.Counts.Digest)
	if err != nil {
		return nil, err.Error()
	}
	return set, ""
}
