package autoreply

import (
	"encoding/json"

	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
)

// SpendZero: spend_per_day or spend_per_peer_per_day is 0; untrusted tasks wait (K2).
const SpendZero reasons.Code = "spend_zero"

func init() {
	reasons.Register(reasons.Entry{Code: SpendZero, Kind: reasons.KindConfig, Text: "the spend cap is 0 (auto_reply.sandbox.spend_per_day or spend_per_peer_per_day); untrusted tasks wait in the inbox", Requirement: "K2"})
}

// detailCost is the detail of run_counted entries whose sum is the day's spend (K2).
const detailCost = "cost_micros"

// countedSpendKeys are the turn_completed details a run_counted entry repeats (K1): the
// run's model, tokens and cost, never any text of the task or the answer.
var countedSpendKeys = []string{"model", "tokens", detailCost, "usage_missing", "allowance_micros", "spend_unknown"}

// spendDetails is a run's spend as evidence details (K1).
func spendDetails(s money.Spend) map[string]any {
	d := map[string]any{"model": s.Model, "tokens": s.Tokens, detailCost: int64(s.Cost), "usage_missing": s.UsageMissing}
	if s.Allowance != nil {
		d["allowance_micros"] = int64(*s.Allowance)
	}
	return d
}

// unknownSpend stands for a capped run whose usage never arrived (its endpoint could not be
// closed cleanly): the whole allowance counts as spent, the most it could have cost (K2).
func unknownSpend(allowance money.Micros) map[string]any {
	d := spendDetails(money.Spend{Cost: allowance, Allowance: &allowance})
	d["spend_unknown"] = true
	return d
}

// endpointSpend reads the model spend out of an endpoint's usage report.
func endpointSpend(raw json.RawMessage) (money.Spend, bool) {
	if len(raw) == 0 {
		return money.Spend{}, false
	}
	var u struct {
		Model struct {
			Spend *money.Spend `json:"spend"`
		} `json:"model"`
	}
	if json.Unmarshal(raw, &u) != nil || u.Model.Spend == nil {
		return money.Spend{}, false
	}
	return *u.Model.Spend, true
}
