package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/reasons"
)

// wallDetails are a wall_proved entry's details: the verdict, why and where it was made, and
// every item. Requirement, code and fix are written when an item has them (a failed item's
// fix is what the operator is told after a restart too).
type wallDetails struct {
	OK      bool       `json:"ok"`
	Why     string     `json:"why"`
	Tier    string     `json:"tier"`
	Version string     `json:"version"`
	Items   []wallItem `json:"items"`
}

type wallItem struct {
	Name        string       `json:"name"`
	OK          bool         `json:"ok"`
	Detail      string       `json:"detail"`
	Requirement string       `json:"requirement,omitempty"`
	Code        reasons.Code `json:"code,omitempty"`
	Fix         string       `json:"fix,omitempty"`
}

func wallDetailsOf(p control.WallProof) wallDetails {
	d := wallDetails{OK: p.OK, Why: p.Why, Tier: p.Tier, Version: p.Version, Items: make([]wallItem, 0, len(p.Items))}
	for _, c := range p.Items {
		d.Items = append(d.Items, wallItem{Name: c.Name, OK: c.OK, Detail: c.Detail, Requirement: c.Requirement, Code: c.Code, Fix: c.Fix})
	}
	return d
}

// parseWallDetails reads a wall_proved entry's details back into a proof (without its time
// and sequence number, which are the entry's). The verdict is computed from the items again,
// never taken from the "ok" written beside them: an entry whose two disagree, or that has no
// item, is refused.
func parseWallDetails(raw []byte) (control.WallProof, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d wallDetails
	if err := dec.Decode(&d); err != nil {
		return control.WallProof{}, fmt.Errorf("wall_proved details: %w", err)
	}
	if dec.More() {
		return control.WallProof{}, errors.New("wall_proved details: data after the object")
	}
	items := make([]check.Check, 0, len(d.Items))
	for i, it := range d.Items {
		if it.Name == "" {
			return control.WallProof{}, fmt.Errorf("wall_proved details: items[%d]: no name", i)
		}
		items = append(items, check.Check{Name: it.Name, OK: it.OK, Detail: it.Detail, Requirement: it.Requirement, Code: it.Code, Fix: it.Fix})
	}
	p := newWallProof(time.Time{}, d.Why, d.Tier, d.Version, items)
	if len(items) == 0 {
		return control.WallProof{}, errors.New("wall_proved details: no item")
	}
	if p.OK != d.OK {
		return control.WallProof{}, fmt.Errorf("wall_proved details: ok is %v but the items say %v", d.OK, p.OK)
	}
	return p, nil
}
