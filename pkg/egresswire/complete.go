package egresswire

import (
	"fmt"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/money"
)

// MethodComplete is the openai back-end's one request (P3, CompleteRequest → CompleteReply):
// anetd asks anet-egress to make one chat completion for a task with the pinned model, the
// output cap and store:false, through the same model-proxy rules an agent's requests meet.
const MethodComplete = "complete"

// CompleteRequest is one completion.
type CompleteRequest struct {
	// RunID names the call in logs and usage.
	RunID string `json:"run_id"`
	// APIBase is the operator's OpenAI-compatible service; "" is https://api.openai.com.
	APIBase string `json:"api_base,omitempty"`
	// Model is the configured model; "" pins the upstream's cheapest (E2).
	Model string `json:"model,omitempty"`
	// Task is the requester's text, sent as the one user message.
	Task string `json:"task"`
	// Allowance is what the call may spend, in micro-units (K2); nil: no allowance.
	Allowance *money.Micros `json:"allowance_micros,omitempty"`
}

// Validate checks r; errors name the field.
func (r CompleteRequest) Validate() error {
	switch {
	case !runIDRE.MatchString(r.RunID):
		return fmt.Errorf("complete run_id %q: want 1-128 letters, digits, '.', '_' or '-'", r.RunID)
	case r.Task == "":
		return fmt.Errorf("complete task: empty")
	case len(r.Task) > limits.TaskTextBytes:
		return fmt.Errorf("complete task: %d bytes, more than %d", len(r.Task), limits.TaskTextBytes)
	case r.Allowance != nil && *r.Allowance < 0:
		return fmt.Errorf("complete allowance_micros %d: must not be negative", *r.Allowance)
	}
	return nil
}

// CompleteReply is the model's answer.
type CompleteReply struct {
	// Text is the first choice's message content.
	Text string `json:"text"`
	// Model is the model the request was pinned to.
	Model string `json:"model"`
	// Status is the upstream's HTTP status.
	Status int `json:"status"`
	// Failed says why a call that reached the model gave no answer ("" when it did); the
	// reply still carries what the call cost.
	Failed string `json:"failed,omitempty"`
	// Spend is the call's tokens and cost (K1); nil when the model was not called.
	Spend *money.Spend `json:"spend,omitempty"`
}
