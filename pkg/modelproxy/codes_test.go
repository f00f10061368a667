package modelproxy

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/reasons"
)

// E9: every sentence an agent can read is in the reason catalog.
func TestCodesRegisteredE9(t *testing.T) {
	for _, c := range []reasons.Code{rules.EndpointNotAllowed, PlaceholderMissing, rules.BodyEncoded, rules.BodyNotJSON,
		rules.BodyNotObject, BodyTooLarge, RequestLimit, RequestDataLimit, rules.ServerToolRefused, rules.BlockRefused,
		rules.MCPServersRefused, rules.ContainerRefused, rules.MediaRefused, rules.StorageRefused, rules.FieldNotAllowed, rules.FieldInvalid,
		rules.PrefillRefused, rules.HeaderInvalid, UpstreamFailed, upstream.APIBaseRefused, upstream.APIBaseInvalid} {
		e, ok := reasons.Lookup(c)
		if !ok || e.Text == "" || e.Requirement == "" {
			t.Errorf("reasons.Lookup(%s) = %+v, %v, want a registered entry with text and requirement", c, e, ok)
		}
	}
}

// R1, E9: the limit sentences are built from the figures: the catalog states R1's, and a
// changed table changes the sentences with it.
func TestLimitSentencesFollowTheFiguresR1(t *testing.T) {
	for _, e := range limitEntries(limits.R1Model()) {
		if got := reasons.Text(e.Code); got != e.Text {
			t.Errorf("catalog text of %s = %q, want the sentence built from R1's figures %q", e.Code, got, e.Text)
		}
	}
	changed := limits.R1Model()
	changed.Requests, changed.BodyBytes, changed.TotalBytes = 7, 3*limits.MiB, 5*limits.KiB
	want := map[reasons.Code]string{RequestLimit: "its 7 model requests", BodyTooLarge: "at most 3 MiB", RequestDataLimit: "its 5 KiB of model request data"}
	for _, e := range limitEntries(changed) {
		if !strings.Contains(e.Text, want[e.Code]) {
			t.Errorf("with %+v, %s = %q, want it to say %q", changed, e.Code, e.Text, want[e.Code])
		}
		delete(want, e.Code)
	}
	if len(want) != 0 {
		t.Errorf("limitEntries has no sentence for %v", want)
	}
}
