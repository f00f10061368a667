//go:build !noautoreply

package main

import (
	"bytes"
	"testing"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/control"
)

// U1: autoreply test shows the agent's answer and check details visibly.
func TestAutoReplyTestRendersSafely(t *testing.T) {
	var b bytes.Buffer
	printAutoReplyTest(&b, control.AutoReplyTest{Answer: hostile, Report: check.New(check.Fail("answer", "S8", "no_answer", hostile))})
	assertNoRaw(t, "anet autoreply test", b.String())
}
