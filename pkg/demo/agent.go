package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// AskModel sends task to the model API at base (a run's endpoint, as the node gives it to
// Claude Code: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL) and returns the
// model's text and the model that answered. It is what the demo agent does, and the test
// agent of the integration tests too.
func AskModel(base, token, model, task string) (text, answeredBy string, err error) {
	body, _ := json.Marshal(map[string]any{
		"model":      model,
		"max_tokens": 64000, // the endpoint caps it at 8192 (E3)
		"messages":   []map[string]any{{"role": "user", "content": task}},
	})
	req, err := http.NewRequest("POST", strings.TrimRight(base, "/")+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return "", "", fmt.Errorf("model call: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		return "", "", fmt.Errorf("model call: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("model call: %d %s", resp.StatusCode, b)
	}
	var m struct {
		Model   string `json:"model"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Content) == 0 {
		return "", "", fmt.Errorf("model answer: %w: %s", errNoAnswer, b)
	}
	return m.Content[0].Text, m.Model, nil
}

// RunAgent is the demo's agent: a tiny program the node starts as `claude` (it takes Claude
// Code's arguments, the task last, and its endpoint settings from the environment), inside
// the run's sandbox. It asks the model once through the run's endpoint and prints Claude
// Code's `--output-format json` result, which is how the node reads the answer. It returns
// the exit status.
func RunAgent(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		json.NewEncoder(stdout).Encode(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": err.Error()})
		fmt.Fprintf(stderr, "demo agent: %v\n", err)
		return 1
	}
	if len(args) == 2 && args[1] == "--version" {
		fmt.Fprintln(stdout, "anet demo agent (Claude Code stand-in)")
		return 0
	}
	if len(args) < 2 {
		return fail(fmt.Errorf("no task"))
	}
	task := args[len(args)-1]
	base, tok := getenv("ANTHROPIC_BASE_URL"), getenv("ANTHROPIC_AUTH_TOKEN")
	if base == "" || tok == "" {
		return fail(fmt.Errorf("no endpoint settings in the environment (the demo agent runs only in the node's sandbox)"))
	}
	text, _, err := AskModel(base, tok, getenv("ANTHROPIC_MODEL"), task)
	if err != nil {
		return fail(err)
	}
	json.NewEncoder(stdout).Encode(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text})
	return 0
}
