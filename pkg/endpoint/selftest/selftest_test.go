package selftest

import (
	"context"
	"testing"
	"time"
)

// The self-test against this build's real endpoint passes every check (C4); CI
// runs it through this test.
func TestSelfTestPasses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) < 25 {
		t.Fatalf("only %d checks ran", len(rep.Checks))
	}
	for _, r := range rep.Checks {
		if !r.OK {
			t.Errorf("%s [%s]: %s", r.Name, r.Requirement, r.Detail)
		}
	}
	if !rep.OK {
		t.Fatal("the report is not ok although every check passed")
	}
}

// The verdict function must not count an answer without the anet: sentence (a proxy that
// forwards upstream's own 400, say) as the node's refusal, nor a success.
func TestRefusedNeedsTheRuleSentence(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   bool
	}{
		{400, `{"error":{"message":"anet: tools run by the model service"}}`, true},
		{400, `{"error":{"message":"invalid x-api-key"}}`, false},
		{200, `{"note":"anet: would be odd"}`, false},
	} {
		if got := refused(tc.status, tc.body); got != tc.want {
			t.Errorf("refused(%d, %s) = %v, want %v", tc.status, tc.body, got, tc.want)
		}
	}
}
