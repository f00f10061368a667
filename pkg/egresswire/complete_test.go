package egresswire

import (
	"strings"
	"testing"

	"anet.dev/anet/pkg/limits"
)

func TestRequestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		r    CompleteRequest
		want string
	}{
		{"ok", CompleteRequest{RunID: "r1", Task: "hi"}, ""},
		{"ok with base and model", CompleteRequest{RunID: "r1", Task: "hi", APIBase: "https://llm.example/v1", Model: "m"}, ""},
		{"no run id", CompleteRequest{Task: "hi"}, "run_id"},
		{"run id with slash", CompleteRequest{RunID: "../x", Task: "hi"}, "run_id"},
		{"empty task", CompleteRequest{RunID: "r1"}, "task: empty"},
		{"task too large", CompleteRequest{RunID: "r1", Task: strings.Repeat("x", limits.TaskTextBytes+1)}, "more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.r.Validate()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Validate(%s) = %v, want %q", c.name, err, c.want)
			}
		})
	}
}
