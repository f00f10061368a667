// Command testagent plays the `claude` CLI for the auto-reply integration tests: it is put on
// anetd's PATH as `claude`, so the node starts it exactly as it starts the real agent (argv,
// environment, sandbox, endpoint). It reads the endpoint settings the node gives Claude Code
// (ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_MODEL), sends one POST /v1/messages
// through the run's endpoint, and prints Claude Code's `--output-format json` result object
// with the model's text and the task, so a reply proves sandbox, endpoint and upstream.
//
// It writes "started" into its work dir (the current directory) first, so tests can tell
// whether it ran. A task containing HOLD makes the first run of an interaction sleep after
// the model call (kill -9 tests); later runs of it see the marker and answer. A task
// containing FAIL makes it exit 1 after the model call; SLOW makes it take five seconds; LOOP
// makes it stream one request after another, refused or not, until its run is stopped (a
// runaway agent spending until its wall clock). A task containing "CURL host" makes it run
// the system's curl for https://host/ as an agent's tool would, with the environment the node
// gave it, and put curl's exit status and verbose output into its answer.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"anet.dev/anet/pkg/demo"
)

func main() {
	if err := run(); err != nil {
		json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "result": err.Error()})
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("no task")
	}
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		// What anet doctor asks of the agent's program.
		fmt.Println("testagent 1.0 (Claude Code stand-in)")
		return nil
	}
	task := os.Args[len(os.Args)-1]
	f, err := os.OpenFile("started", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("marker: %w", err)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	f.Close()
	base, tok := os.Getenv("ANTHROPIC_BASE_URL"), os.Getenv("ANTHROPIC_AUTH_TOKEN")
	if base == "" && tok == "" {
		// Direct mode (P4): the operator's own agent with the operator's own settings; this
		// stand-in has none and answers without a model.
		wd, _ := os.Getwd()
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": "direct in " + wd + ": " + task})
	}
	if base == "" || tok == "" {
		return fmt.Errorf("incomplete endpoint settings in the environment")
	}
	if strings.Contains(task, "LOOP") {
		return loop(base, tok)
	}
	text, model, err := demo.AskModel(base, tok, os.Getenv("ANTHROPIC_MODEL"), task)
	if err != nil {
		return err
	}
	if strings.Contains(task, "HOLD") {
		if _, err := os.Stat("held"); err != nil {
			os.WriteFile("held", nil, 0o600)
			time.Sleep(10 * time.Minute)
		}
	}
	if strings.Contains(task, "FAIL") {
		// Leak the run's token where an operator would look (stderr, the result): the node
		// must keep it out of its log and evidence. The work dir copy lets the test know it.
		os.WriteFile("token", []byte(tok), 0o600)
		fmt.Fprintf(os.Stderr, "failing with token %s\n", tok)
		return fmt.Errorf("asked to fail (token %s)", tok)
	}
	if strings.Contains(task, "SLOW") {
		time.Sleep(5 * time.Second)
	}
	out := fmt.Sprintf("model %s says %s to: %s", model, text, task)
	if _, host, ok := strings.Cut(task, "CURL "); ok {
		host, _, _ = strings.Cut(host, " ")
		out += "\n" + curl(host)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": out})
}

// loop streams Messages requests until the run is killed, never stopping on a refusal. Each
// answer's status goes to stderr (the node keeps it in the turn's detail on failure).
func loop(base, tok string) error {
	body, _ := json.Marshal(map[string]any{
		"model": os.Getenv("ANTHROPIC_MODEL"), "max_tokens": 8192, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": "go on"}},
	})
	c := &http.Client{Timeout: 60 * time.Second}
	for {
		req, _ := http.NewRequest("POST", strings.TrimRight(base, "/")+"/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := c.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loop:", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != 200 {
			fmt.Fprintf(os.Stderr, "loop: %d %s\n", resp.StatusCode, resp.Header.Get("X-Anet-Reason"))
			time.Sleep(100 * time.Millisecond)
		} else if !bytes.Contains(b, []byte("message_stop")) {
			fmt.Fprintln(os.Stderr, "loop: stream ended early")
		}
	}
}

// curl fetches https://host/ with the system's curl, as a shell tool of an agent would: the
// proxy it uses is whatever the node put in the environment.
func curl(host string) string {
	cmd := exec.Command("curl", "-sS", "-v", "--max-time", "20", "-o", "/dev/null", "https://"+host+"/")
	b, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return fmt.Sprintf("curl exit %d:\n%s", code, b)
}
