package doctor

import (
	"context"
	"errors"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/reasons"
)

// ConfigChecks applies the rules anetd applies before it starts (pkg/preflight: the config
// file, the socket paths, the keys file through anet-egress's own check), one finding per
// rule, in the words and with the code anetd --check gives.
func ConfigChecks(ctx context.Context, o preflight.Options) []check.Check {
	_, _, results := preflight.Check(ctx, o)
	out := make([]check.Check, 0, len(results))
	for _, r := range results {
		out = append(out, checkOf(r.Name, r.Requirement, r.Err))
	}
	return out
}

// checkOf turns a rule's verdict into a finding: the message as detail, the command that
// repairs it as fix.
func checkOf(name, requirement string, err error) check.Check {
	if err == nil {
		return check.Pass(name, requirement, "")
	}
	c := check.Fail(name, requirement, reasons.CodeOf(err), reasons.Message(err))
	if c.Code == "" {
		c.Code = reasons.Internal
	}
	var pe *config.PermError
	if errors.As(err, &pe) && pe.Fix != "" {
		c.Detail, c.Fix = pe.Msg, pe.Fix
	}
	return c
}
