package autoreply

import "anet.dev/anet/pkg/reasons"

// Codes this package owns.
const (
	// TurnFailed is the refusal a requester gets when the agent ran but gave no answer.
	TurnFailed reasons.Code = "turn_failed"
	// AgentMissing: the configured agent's program is not on anetd's PATH.
	AgentMissing = reasons.AgentMissing
	// AutoReplyOff: the policy for this class of peer is off; the task waits in the inbox.
	AutoReplyOff reasons.Code = "auto_reply_off"
	// BudgetZero: runs_per_day or runs_per_peer_per_day is 0; untrusted tasks wait (B3).
	BudgetZero reasons.Code = "budget_zero"
	// ModelCallFailed: none of the run's model requests got a good answer from upstream.
	ModelCallFailed reasons.Code = "model_call_failed"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: TurnFailed, Kind: reasons.KindRefusal, Text: "the provider's agent ran but produced no answer; send the task again later or rephrase it", Requirement: "F1"},
		reasons.Entry{Code: AutoReplyOff, Kind: reasons.KindConfig, Text: "auto-reply is off for this class of peer (auto_reply.trusted / auto_reply.untrusted); tasks wait in the inbox", Requirement: "P1"},
		reasons.Entry{Code: ModelCallFailed, Kind: reasons.KindConfig, Text: "the run's model requests reached the node but none got a good answer from the model service; the detail names what the upstream said or why it could not be reached", Requirement: "S8"},
		reasons.Entry{Code: BudgetZero, Kind: reasons.KindConfig, Text: "the run budget is 0 (auto_reply.sandbox.runs_per_day or runs_per_peer_per_day); untrusted tasks wait in the inbox", Requirement: "B3"},
	)
}
