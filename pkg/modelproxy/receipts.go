package modelproxy

import (
	"math"
	"time"

	"anet.dev/anet/pkg/modelproxy/metering"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// modelEnd is how a request that ended with code ended, for its receipt: a limit of R1 caps
// it, the model service failing it is a failure, any other rule (E2–E8, the spend allowance
// of K2) refuses it.
func modelEnd(c reasons.Code) receipt.End {
	switch c {
	case "":
		return receipt.Closed
	case BodyTooLarge, RequestLimit, RequestDataLimit:
		return receipt.Capped
	case UpstreamFailed, AnswerEncoded:
		return receipt.Failed
	default:
		return receipt.Refused
	}
}

// newModelReceipt starts the receipt of a request that carried the run's token. path is the
// escaped path, without the query string.
func newModelReceipt(method, path string) *receipt.Model {
	return &receipt.Model{Method: receipt.Clip(method), Path: receipt.Clip(path), Started: time.Now().UTC()}
}

// charge records what the meter charged the request (K1): every input class in, output with
// reasoning out (reasoning is part of output), saturating as the meter does.
func charge(rc *receipt.Model, c metering.Charge) {
	t := c.Tokens
	rc.TokensIn = satAdd(satAdd(t.Input, t.CacheWrite), t.CacheRead)
	rc.TokensOut, rc.Cost = max(t.Output, 0), max(c.Cost, 0)
}

func satAdd(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// keep ends rc with the status the agent got and code, and keeps it; each request is kept
// once.
func (p *Proxy) keep(rc *receipt.Model, status int, code reasons.Code) {
	rc.Status = status
	rc.Ended = time.Now().UTC()
	if rc.Ended.Before(rc.Started) {
		rc.Ended = rc.Started // the wall clock stepped back
	}
	rc.End, rc.Code, rc.Rule = modelEnd(code), code, receipt.RuleOf(code)
	p.receipts.Add(*rc)
}
