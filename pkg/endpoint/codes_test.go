package endpoint

import (
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// E9: the endpoint's sentences are in the reason catalog.
func TestCodesRegisteredE9(t *testing.T) {
	for _, c := range []reasons.Code{NotFound, TunnelUnavailable, ConnectionLimit} {
		if e, ok := reasons.Lookup(c); !ok || e.Kind != reasons.KindRule || e.Text == "" {
			t.Errorf("reasons.Lookup(%s) = %+v, %v, want a rule entry", c, e, ok)
		}
	}
}
