package egress

import (
	"strings"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/reasons"
)

// ValidateAllowList applies the one allow-list rule (config.ValidateEgressAllow: H2, H3) to a
// run's list, so the endpoint refuses exactly what the config file and the CLI refuse, in the
// same words. modelHosts are names, host:port pairs or URLs (the configured api_base); the
// fixed upstreams are always refused. The error carries the code egress_allow_entry_refused.
func ValidateAllowList(entries []string, modelHosts []string) error {
	if err := config.ValidateEgressAllow(entries, modelHosts...); err != nil {
		return reasons.New(AllowListRefuse, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}
