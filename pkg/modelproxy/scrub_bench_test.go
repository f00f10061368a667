//go:build anettest

package modelproxy

import (
	"log/slog"
	"strings"
	"testing"
)

// BenchmarkKeyScrubAnswer is the redaction's CPU per answer on the success path (nothing to
// redact; nothing is asserted): a 2 KiB JSON answer in one write, and a stream's text event,
// for the key alone and for the key and the placeholder, as a run has them.
func BenchmarkKeyScrubAnswer(b *testing.B) {
	key := "sk-ant-api03-" + strings.Repeat("Ab3_", 20)
	ph := strings.Repeat("0123456789abcdef", 4)
	answer := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("a sentence of an answer, with words. ", 52) + `"}],"usage":{"input_tokens":3,"output_tokens":1}}`)
	event := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word 7 of a streamed answer, about as long as a real delta\"}}\n\n")
	for _, tc := range []struct{ name, ph string }{{"key", ""}, {"key+placeholder", ph}} {
		k, err := newScrub(key, tc.ph, "up.example", slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range []struct {
			name string
			data []byte
		}{{"json2k", answer}, {"event", event}} {
			b.Run(tc.name+"/"+in.name, func(b *testing.B) {
				var buf []byte
				b.SetBytes(int64(len(in.data)))
				b.ReportAllocs()
				for range b.N {
					if _, _, found := k.body(in.data, false, false, &buf); found != 0 {
						b.Fatal("found a secret in an answer without one")
					}
				}
			})
		}
	}
}
