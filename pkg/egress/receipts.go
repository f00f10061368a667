package egress

import (
	"strconv"
	"strings"
	"time"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/receipt"
)

// closeWait bounds how long Close waits for the CONNECTs in flight to record their receipts;
// closing their connections ends them, so it is rarely waited for.
const closeWait = 5 * time.Second

// endOf is how a tunnel that ended with code ended, for its receipt: a limit of R1 caps it,
// a host the node could not resolve or reach is a failure, any other rule refuses it, and
// the run's own end, like the agent's hang-up, is a close.
func endOf(c reasons.Code) receipt.End {
	switch c {
	case "", RunOver:
		return receipt.Closed
	case TunnelLimit, BytesLimit:
		return receipt.Capped
	case ResolveFailed, DialFailed:
		return receipt.Failed
	default:
		return receipt.Refused
	}
}

// askedTarget is the host and port of a CONNECT's request-target as the agent wrote them,
// clipped: a refused target is recorded too, however it is spelt. Port is 0 when it is no
// port number.
func askedTarget(target string) (string, int) {
	host, port := target, 0
	if i := strings.LastIndexByte(target, ':'); i >= 0 {
		host = target[:i]
		if n, err := strconv.Atoi(target[i+1:]); err == nil && n >= 0 && n <= 65535 {
			port = n
		}
	}
	return receipt.Clip(host), port
}

// newReceipt starts the receipt of the CONNECT r, received at start.
func newReceipt(target string, start time.Time) receipt.Tunnel {
	host, port := askedTarget(target)
	return receipt.Tunnel{Host: host, Port: port, Opened: start.UTC()}
}

// record ends rc with code and keeps it: each CONNECT is recorded once, when it ends.
func (p *Proxy) record(rc receipt.Tunnel, code reasons.Code) {
	rc.Ended = time.Now().UTC()
	if rc.Ended.Before(rc.Opened) {
		rc.Ended = rc.Opened // the wall clock stepped back
	}
	rc.End, rc.Code, rc.Rule = endOf(code), code, receipt.RuleOf(code)
	p.receipts.Add(rc)
}

// Receipts returns the receipts of the run's CONNECTs that have ended, in the order they
// ended, and how many passed receipt.MaxPerKind. After Close it holds every CONNECT.
func (p *Proxy) Receipts() ([]receipt.Tunnel, int) { return p.receipts.Snapshot() }

// refusalBody is the answer to a refused CONNECT (E9): the sentence, and the rule and code
// it enforces, which X-Anet-Refusal carries too.
func refusalBody(c reasons.Code) string {
	if rule := receipt.RuleOf(c); rule != "" {
		return "anet: " + reasons.Text(c) + " (rule " + rule + ", code " + string(c) + ")\n"
	}
	return "anet: " + reasons.Text(c) + " (code " + string(c) + ")\n"
}
