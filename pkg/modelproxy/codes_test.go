package modelproxy

import (
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// E9: every sentence an agent can read is in the reason catalog.
func TestCodesRegisteredE9(t *testing.T) {
	for _, c := range []reasons.Code{EndpointNotAllowed, PlaceholderMissing, BodyEncoded, BodyNotJSON,
		BodyNotObject, BodyTooLarge, RequestLimit, RequestDataLimit, ServerToolRefused, BlockRefused,
		MCPServersRefused, ContainerRefused, MediaRefused, StorageRefused, FieldNotAllowed, FieldInvalid,
		PrefillRefused, HeaderInvalid, UpstreamFailed, APIBaseRefused, APIBaseInvalid} {
		e, ok := reasons.Lookup(c)
		if !ok || e.Text == "" || e.Requirement == "" {
			t.Errorf("reasons.Lookup(%s) = %+v, %v, want a registered entry with text and requirement", c, e, ok)
		}
	}
}
