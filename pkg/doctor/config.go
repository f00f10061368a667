package doctor

import (
	"context"
	"errors"
	"strings"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/preflight"
	"anet.dev/anet/pkg/reasons"
)

// ConfigChecks applies the rules anetd applies before it starts (pkg/preflight: the config
// file, the socket paths, the keys file through anet-egress's own check), one finding per
// rule, in the words and with the code anetd --check gives. It returns the paths and the
// configuration too (the defaults when the file cannot be read).
func ConfigChecks(ctx context.Context, o preflight.Options) (config.Paths, config.Config, []check.Check) {
	p, c, results := preflight.Check(ctx, o)
	out := make([]check.Check, 0, len(results))
	ok := true
	for _, r := range results {
		out = append(out, checkOf(strings.ReplaceAll(r.Name, " ", "_"), r.Requirement, r.Err))
		ok = ok && r.Err == nil
	}
	if !ok && c.AutoReply.Backend == "" {
		c = config.Default()
	}
	return p, c, out
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
