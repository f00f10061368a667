package autoreply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"anet.dev/anet/pkg/receipt"
)

// usageReceipts is the key of a sandboxed run's usage (egresswire.CloseReply.Usage) that holds
// the run's receipts, a receipt.Set (H1–H7, R1, K1). The store keeps them beside the run's
// turn_completed entry; the entry keeps the usage without them and, under the same key in
// its details, their digest and counts (receipt.Counts).
const usageReceipts = "receipts"

// detailReceiptsMissing marks a sandboxed run's completion whose receipts did not arrive or
// could not be read (or kept): the completion counts all the same (B1).
const detailReceiptsMissing = "receipts_missing"

// RunReceipts are a run's receipts on their way to the store.
type RunReceipts struct {
	Set receipt.Set
	// Encoded is receipt.Encode(Set): the bytes the store keeps verbatim and the digest is over.
	Encoded []byte
}

// takeReceipts splits an endpoint's usage into what the chain entry keeps (the usage without
// its receipts) and the receipts. rc is nil when the usage names none; err says why a
// receipts value that is there cannot be used, and rest never holds it either way: the
// bytes come from anet-egress, and a set as large as the bounds allow would not fit in an
// entry's details.
func takeReceipts(usage json.RawMessage) (rest json.RawMessage, rc *RunReceipts, err error) {
	if len(usage) == 0 {
		return usage, nil, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(usage, &m) != nil || m == nil {
		return usage, nil, nil // not an object: it holds no receipts
	}
	raw, ok := m[usageReceipts]
	if !ok {
		return usage, nil, nil
	}
	delete(m, usageReceipts)
	if rest, err = json.Marshal(m); err != nil {
		return nil, nil, fmt.Errorf("usage without its receipts: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return rest, nil, errors.New("receipts: null, want a set")
	}
	set, err := receipt.Decode(raw)
	if err != nil {
		return rest, nil, err
	}
	enc, err := receipt.Encode(set)
	if err != nil {
		return rest, nil, err
	}
	return rest, &RunReceipts{Set: set, Encoded: enc}, nil
}
