//go:build linux

// Command standin is the hosts rig's api.anthropic.com: pkg/modelproxy/standin's stand-in model
// service on the guest's own 127.0.0.1:443, with a throw-away CA that the scenario installs in
// the guest's system store (update-ca-certificates) and an /etc/hosts line that sends the
// name here. So the release anet-egress reaches it exactly as it reaches the real service:
// by name, over TLS it verifies against the system's roots, with no test hook (C4, E1).
//
//	standin -listen 127.0.0.1:443 -ca CA.crt -key-file KEY -answer TEXT -report REPORT.json [-stall FILE]
//
// It writes the CA once it listens (the scenario waits for that file), answers every streamed
// Messages request with TEXT, and on SIGTERM writes what it saw to REPORT: the paths asked,
// and every problem the stand-in found (a missing operator key, a placeholder that arrived,
// a model other than the pinned one). While FILE exists, an answer waits: a run stays in its
// model call for as long as the scenario needs it running.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

type report struct {
	Paths    []string `json:"paths"`
	Messages int      `json:"messages"`
	Problems []string `json:"problems"`
}

func main() {
	listen := flag.String("listen", "127.0.0.1:443", "address to serve TLS on")
	caOut := flag.String("ca", "", "`FILE` to write the CA certificate to (PEM)")
	keyFile := flag.String("key-file", "", "`FILE` holding the operator's key the stand-in demands")
	pinned := flag.String("model", "claude-haiku-5-5", "the only model a request may name")
	answer := flag.String("answer", "", "the text every Messages request is answered with")
	reportOut := flag.String("report", "", "`FILE` to write what the stand-in saw to, on SIGTERM")
	stall := flag.String("stall", "", "while `FILE` exists, answers wait")
	flag.Parse()
	if err := run(*listen, *caOut, *keyFile, *pinned, *answer, *reportOut, *stall); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

func run(listen, caOut, keyFile, pinned, answer, reportOut, stall string) error {
	if caOut == "" || keyFile == "" || answer == "" || reportOut == "" {
		return fmt.Errorf("-ca, -key-file, -answer and -report are all required")
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("read the key: %w", err)
	}
	key := strings.TrimSpace(string(b))
	ca, err := localca.New("api.anthropic.com")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	// The run's placeholder is made per run, after the stand-in starts; the scenario checks
	// the key's absence from every log itself. The stand-in still refuses any request without
	// the operator's key.
	up := standin.ServeUpstream(ln, ca, key, "never-sent-"+fmt.Sprint(os.Getpid()), pinned)
	up.SetStream(streamText(pinned, answer, stall))
	if err := os.WriteFile(caOut, ca.PEM, 0o644); err != nil {
		return fmt.Errorf("write the CA: %w", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	up.Close()
	r := report{Paths: []string{}, Problems: up.Problems()}
	for _, q := range up.Requests() {
		r.Paths = append(r.Paths, q.Path)
		if q.Path == "/v1/messages" {
			r.Messages++
		}
	}
	if r.Problems == nil {
		r.Problems = []string{}
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(reportOut, out, 0o644)
}

// streamText answers a streamed Messages request with one text block, event by event, as
// api.anthropic.com does, once stall (if named) does not exist; it waits ten minutes at most.
func streamText(model, text, stall string) func(w http.ResponseWriter, f http.Flusher) {
	return func(w http.ResponseWriter, f http.Flusher) {
		// The scenario reads this line to know a run is in its model call.
		fmt.Fprintln(os.Stderr, "standin: a streamed Messages request")
		for deadline := time.Now().Add(10 * time.Minute); stall != "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if _, err := os.Stat(stall); err != nil {
				break
			}
		}
		for _, e := range [][2]string{
			{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_rig_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`, model)},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text)},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`},
			{"message_stop", `{"type":"message_stop"}`},
		} {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
			f.Flush()
		}
	}
}
