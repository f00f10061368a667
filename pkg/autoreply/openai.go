package autoreply

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"anet.dev/anet/pkg/egresswire"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
)

// openaiTurn answers t with one chat completion made by anet-egress (P3): no program starts
// and no sandbox is used; anetd never sees the key. The call is metered and held to
// allowance like an agent's requests (K1, K2).
func (e *Engine) openaiTurn(ctx context.Context, log *slog.Logger, run string, t peer.Task, set *Settings, allowance *money.Micros, started func(), tr *tracer) outcome {
	c := set.Config
	req := egresswire.CompleteRequest{RunID: run, APIBase: c.APIBase, Model: c.Model, Task: t.Text, Allowance: allowance}
	if err := req.Validate(); err != nil {
		tr.fail("request", reasons.BadRequest, err.Error())
		return outcome{refusal: TurnFailed, code: reasons.BadRequest, detail: err.Error()}
	}
	started()
	log.Info("model call starting", "backend", "openai")
	// The same wall clock as an agent's run (api_timeout_seconds, S6).
	cctx, cancel := context.WithTimeout(ctx, c.APITimeout)
	defer cancel()
	rep, err := e.o.Completer.Complete(cctx, req)
	out := outcome{ran: true, refusal: TurnFailed, metered: true, spend: rep.Spend, details: map[string]any{"backend": "openai"}}
	if err != nil {
		code := codeOf(err)
		tr.fail("model_call", code, err.Error())
		switch code {
		case reasons.HelperDown, reasons.NoAPIKey, reasons.NoAPIBase, reasons.ModelUnpriced:
			// Nothing reached the model service: not a run (not counted).
			return outcome{refusal: reasons.SandboxUnavailable, code: code, detail: err.Error()}
		case reasons.SpendLimit:
			// The one request cannot fit in what is left of today's caps (K2): nothing was
			// spent and nothing counts; the requester learns when the day ends.
			return outcome{refusal: reasons.Budget, code: code, detail: err.Error()}
		}
		out.code, out.detail = code, err.Error()
		return out
	}
	out.details["model"], out.details["status"] = rep.Model, rep.Status
	if rep.Failed != "" {
		tr.fail("model_call", TurnFailed, rep.Failed)
		out.code, out.detail = TurnFailed, rep.Failed
		return out
	}
	cost := ""
	if rep.Spend != nil {
		cost = ", cost " + rep.Spend.Cost.String()
	}
	tr.ok("model_call", fmt.Sprintf("model %s, status %d%s", rep.Model, rep.Status, cost))
	ans := strings.TrimSpace(rep.Text)
	if ans == "" {
		out.code, out.detail = TurnFailed, "the model returned no text"
		tr.fail("answer", out.code, out.detail)
		return out
	}
	tr.ok("answer", fmt.Sprintf("%d bytes", len(ans)))
	out.answer = ans
	return out
}
