package metering

import (
	"testing"

	"anet.dev/anet/pkg/modelproxy/rules"
)

// The metering's own CPU per answer, apart from the network (make bench reads it as ns/op and
// allocs/op; nothing is asserted): the usage of a JSON answer to a small Messages request.
func BenchmarkUsageOfAnswer(b *testing.B) {
	answer := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-5-5","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	b.ReportAllocs()
	for range b.N {
		var u Answer
		u.body(rules.AnthropicMessages, answer)
	}
}
