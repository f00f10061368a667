package rules

import (
	"net/http"
	"strings"
	"testing"
)

// The rules' own CPU per request, apart from the network (make bench reads these as ns/op
// and allocs/op; nothing is asserted): a small Messages request as Claude Code's first (its
// JSON answer's usage is metering's BenchmarkUsageOfAnswer).
func BenchmarkApplyMessages(b *testing.B) {
	e := mustEngine(b, "claude", "", "")
	body := []byte(`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[{"role":"user","content":"hi"}]}`)
	h := http.Header{"Authorization": {"Bearer x"}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for range b.N {
		if d := e.Apply(AnthropicMessages, h, body); d.Refusal != nil {
			b.Fatal(d.Refusal)
		}
	}
}

// BenchmarkApplyManyBlocks is a long conversation's request, as a coding agent sends late in a
// task: 200 messages of 3 text blocks each, every block checked by E4 with its path.
func BenchmarkApplyManyBlocks(b *testing.B) {
	e := mustEngine(b, "claude", "", "")
	var sb strings.Builder
	sb.WriteString(`{"model":"claude-opus-5-5","max_tokens":128000,"messages":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"text","text":"c"}]}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	h := http.Header{"Authorization": {"Bearer x"}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
	b.ReportAllocs()
	for range b.N {
		if d := e.Apply(AnthropicMessages, h, body); d.Refusal != nil {
			b.Fatal(d.Refusal)
		}
	}
}
