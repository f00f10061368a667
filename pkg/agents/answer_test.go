package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

func readOutput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "outputs", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// opencodeSteps is opencode's event shape (as in testdata/outputs) for a turn with a tool call:
// the text of the first step must not be taken for the answer.
const opencodeSteps = `{"type":"step_start","part":{"messageID":"m1","type":"step-start"}}
{"type":"text","part":{"messageID":"m1","type":"text","text":"Let me look at the file."}}
{"type":"tool_use","part":{"messageID":"m1","type":"tool","tool":"read"}}
{"type":"step_finish","part":{"messageID":"m1","type":"step-finish"}}
{"type":"step_start","part":{"messageID":"m2","type":"step-start"}}
{"type":"text","part":{"messageID":"m2","type":"text","text":"The README "}}
{"type":"text","part":{"messageID":"m2","type":"text","text":"says hello."}}
{"type":"step_finish","part":{"messageID":"m2","type":"step-finish"}}
`

// TestParseAnswer reads each agent's answer form; the claude and opencode cases use output
// captured from the real CLIs (claude 2.1.197 and 2.1.328, opencode 1.18.33) against a fake upstream.
func TestParseAnswer(t *testing.T) {
	cases := []struct {
		name    string
		src     AnswerSource
		stdout  []byte
		files   map[string][]byte
		want    string
		wantErr string // substring; the code is always no_answer
	}{
		{"claude success", AnswerSource{Kind: AnswerClaudeJSON}, readOutput(t, "claude-2.1.197-success.json"), nil, "ANSWER-42", ""},
		{"claude 2.1.328 success", AnswerSource{Kind: AnswerClaudeJSON}, readOutput(t, "claude-2.1.328-success.json"), nil, "ANSWER-42", ""},
		{"claude api error", AnswerSource{Kind: AnswerClaudeJSON}, readOutput(t, "claude-2.1.197-api-error.json"), nil, "", "API Error: 400 fake stop"},
		{"claude not json", AnswerSource{Kind: AnswerClaudeJSON}, []byte("Error: Invalid API key"), nil, "", "not a JSON result object"},
		{"claude trailing data", AnswerSource{Kind: AnswerClaudeJSON}, []byte(`{"type":"result","subtype":"success","result":"a"} {"x":1}`), nil, "", "data after the result"},
		{"claude wrong type", AnswerSource{Kind: AnswerClaudeJSON}, []byte(`{"type":"assistant","subtype":"success","result":"a"}`), nil, "", `type "assistant"`},
		{"claude no result", AnswerSource{Kind: AnswerClaudeJSON}, []byte(`{"type":"result","subtype":"success"}`), nil, "", "has no result"},
		{"claude max turns", AnswerSource{Kind: AnswerClaudeJSON}, []byte(`{"type":"result","subtype":"error_max_turns","is_error":true}`), nil, "", "error_max_turns"},
		{"opencode success", AnswerSource{Kind: AnswerOpencodeJSON}, readOutput(t, "opencode-1.18.33-run.jsonl"), nil, "ANSWER-44", ""},
		{"opencode last message only", AnswerSource{Kind: AnswerOpencodeJSON}, []byte(opencodeSteps), nil, "The README says hello.", ""},
		{"opencode api error", AnswerSource{Kind: AnswerOpencodeJSON}, readOutput(t, "opencode-1.18.33-api-error.jsonl"), nil, "", "APIError: fake stop"},
		{"opencode no text", AnswerSource{Kind: AnswerOpencodeJSON}, []byte(`{"type":"step_start","part":{}}` + "\n"), nil, "", "no text event"},
		{"opencode garbage line", AnswerSource{Kind: AnswerOpencodeJSON}, []byte("{\"type\":\"text\"}\nnot json\n"), nil, "", "line 2 is not JSON"},
		{"text trimmed", AnswerSource{Kind: AnswerText}, []byte("\n  Paris.\n\n"), nil, "Paris.", ""},
		{"text empty", AnswerSource{Kind: AnswerText}, []byte(" \n\t"), nil, "", "empty answer"},
		{"text not utf8", AnswerSource{Kind: AnswerText}, []byte("ok \xff\xfe"), nil, "", "not valid UTF-8"},
		{"text too long", AnswerSource{Kind: AnswerText}, []byte(strings.Repeat("a", MaxAnswerBytes+1)), nil, "", "more than 65536"},
		{"text at the cap", AnswerSource{Kind: AnswerText}, []byte(strings.Repeat("a", MaxAnswerBytes)), nil, strings.Repeat("a", MaxAnswerBytes), ""},
		{"stdout over the read cap", AnswerSource{Kind: AnswerText}, make([]byte, MaxOutputBytes+1), nil, "", "stdout is"},
		{"file", AnswerSource{Kind: AnswerFile, File: ".anet-answer.txt"}, []byte("progress noise"), map[string][]byte{".anet-answer.txt": []byte("ANSWER-43\n")}, "ANSWER-43", ""},
		{"file missing", AnswerSource{Kind: AnswerFile, File: ".anet-answer.txt"}, []byte("ANSWER-43"), nil, "", "was not written"},
		{"unknown kind", AnswerSource{Kind: "smoke-signals"}, []byte("x"), nil, "", `answer kind "smoke-signals"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseAnswer(c.src, c.stdout, c.files)
			if c.wantErr == "" {
				if err != nil || got != c.want {
					t.Fatalf("ParseAnswer = %q, %v; want %q", reasons.Clip(got, 40), err, reasons.Clip(c.want, 40))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ParseAnswer = %q, %v; want an error containing %q", reasons.Clip(got, 40), err, c.wantErr)
			}
			var re *reasons.Error
			if c.src.Kind != "smoke-signals" && (!errors.As(err, &re) || re.Code != NoAnswer) {
				t.Errorf("ParseAnswer error %v: want code %s", err, NoAnswer)
			}
		})
	}
}
