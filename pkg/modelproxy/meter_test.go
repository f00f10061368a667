//go:build anettest

package modelproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/standin"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/secret"
)

// The built-in prices (models.yaml) the tests meter at, in micro-units per million tokens.
const (
	haikuIn, haikuOut, haikuCacheWrite, haikuCacheRead = 100_000, 500_000, 125_000, 10_000
	lunaIn, lunaOut, lunaCacheRead                     = 100_000, 500_000, 10_000
)

// ceilDiv is the one rounding of the cost formula: up, to a whole micro-unit.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// sent sends body as the agent and returns the client's answer and the cost the proxy
// charged for it.
func (h *harness) sent(path, body string, hdr http.Header) (*http.Response, string, money.Spend) {
	h.t.Helper()
	before := h.proxy.Usage().Spend
	resp, b := h.do("POST", path, hdr, body)
	// The client can have the whole answer before the handler has settled it.
	h.proxy.meter.AnetTestSettled()
	after := h.proxy.Usage().Spend
	after.Cost -= before.Cost
	after.Responses -= before.Responses
	after.UsageMissing -= before.UsageMissing
	after.Tokens.Input -= before.Tokens.Input
	after.Tokens.Output -= before.Tokens.Output
	after.Tokens.CacheWrite -= before.Tokens.CacheWrite
	after.Tokens.CacheRead -= before.Tokens.CacheRead
	after.Tokens.Reasoning -= before.Tokens.Reasoning
	return resp, string(b), after
}

// lastBodyLen is the size of the last body the upstream received (the rewritten one, which
// the estimate is made of).
func (h *harness) lastBodyLen() int64 {
	reqs := h.up.Requests()
	return int64(len(reqs[len(reqs)-1].Body))
}

// K1: the cost of every API's answer, JSON and streamed, with and without usage and with
// cache tokens, is the fake's usage × the pinned model's prices, to the micro-unit.
func TestMeteredCostK1(t *testing.T) {
	u := standin.Usage{Input: 12345, Output: 6789, CacheWrite: 2000, CacheRead: 50000, Reasoning: 789}
	// Anthropic: input excludes the cache classes, which have their own prices:
	// 12345×0.1 + 6789×0.5 + 2000×0.125 + 50000×0.01 = 1234.5 + 3394.5 + 250 + 500 = 5379.
	anthropicCost := ceilDiv(12345*haikuIn+6789*haikuOut+2000*haikuCacheWrite+50000*haikuCacheRead, 1e6)
	// OpenAI: the fake reports input 62345 with 50000 cached, output 6789 with 789 of
	// reasoning (billed as output); no cache writes: 1234.5 + 500 + 3394.5 = 5129.
	openaiCost := ceilDiv(12345*lunaIn+50000*lunaCacheRead+6789*lunaOut, 1e6)
	if anthropicCost != 5379 || openaiCost != 5129 {
		t.Fatalf("hand-computed costs %d, %d, want 5379, 5129", anthropicCost, openaiCost)
	}
	for _, c := range []struct {
		name, agent, path, body string
		want                    int64 // -1: the estimate
		wantIn, wantCacheWrite  int64
	}{
		{"anthropic json", "claude", "/v1/messages", `{"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`, anthropicCost, 12345, 2000},
		{"anthropic sse", "claude", "/v1/messages", `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`, anthropicCost, 12345, 2000},
		{"responses json", "codex", "/v1/responses", `{"input":"x","max_output_tokens":100}`, openaiCost, 12345, 0},
		{"responses sse", "codex", "/v1/responses", `{"input":"x","stream":true,"max_output_tokens":100}`, openaiCost, 12345, 0},
		{"chat json", "codex", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":100}`, openaiCost, 12345, 0},
		{"chat sse", "codex", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":100,"stream":true}`, openaiCost, 12345, 0},
		{"compact json", "codex", "/v1/responses/compact", `{"input":"x"}`, openaiCost, 12345, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.agent, "", Limits{})
			h.up.SetUsage(u)
			resp, body, s := h.sent(c.path, c.body, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("POST %s = %d %s", c.path, resp.StatusCode, body)
			}
			if int64(s.Cost) != c.want || s.Responses != 1 || s.UsageMissing != 0 {
				t.Fatalf("charged %d µ over %d responses (%d without usage), want %d over 1 (0)", s.Cost, s.Responses, s.UsageMissing, c.want)
			}
			if s.Tokens.Input != c.wantIn || s.Tokens.Output != 6789 || s.Tokens.CacheRead != 50000 || s.Tokens.CacheWrite != c.wantCacheWrite {
				t.Fatalf("tokens = %+v, want input %d, output 6789, cache read 50000, cache write %d", s.Tokens, c.wantIn, c.wantCacheWrite)
			}
			if c.agent == "codex" && s.Tokens.Reasoning != 789 {
				t.Fatalf("reasoning tokens = %d, want 789", s.Tokens.Reasoning)
			}
			// Without usage (or with the stream cut before it): the estimate, counted.
			for _, miss := range []standin.Usage{{Omit: true}, {Input: 1, Output: 1, Cut: true}} {
				if miss.Cut && !strings.Contains(c.body, `"stream":true`) {
					continue
				}
				h.up.SetUsage(miss)
				resp, body, s := h.sent(c.path, c.body, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("POST %s = %d %s", c.path, resp.StatusCode, body)
				}
				maxIn, out, maxOut := int64(haikuCacheWrite), int64(haikuOut), int64(100)
				if c.agent == "codex" {
					maxIn, out = lunaIn, lunaOut
				}
				if c.path == "/v1/responses/compact" {
					maxOut = 8192 // no output field: the cap (E3)
				}
				est := ceilDiv(ceilDiv(h.lastBodyLen(), 3)*maxIn+maxOut*out, 1e6)
				if int64(s.Cost) != est || s.UsageMissing != 1 || s.Responses != 1 {
					t.Fatalf("%+v: charged %d µ (%d without usage), want the estimate %d (bytes/3 at the top input price + %d output), 1", miss, s.Cost, s.UsageMissing, est, maxOut)
				}
			}
		})
	}
}

// K1: the proxy asks a streamed chat completion for its usage chunk; a client that did not ask
// for it does not get it (a chunk without choices breaks clients that index choices[0]), a
// client that asked gets it unchanged; both are metered.
func TestChatStreamUsageChunkK1(t *testing.T) {
	h := newHarness(t, "codex", "", Limits{})
	h.up.SetUsage(standin.Usage{Input: 1000, Output: 2000})
	want := ceilDiv(1000*lunaIn+2000*lunaOut, 1e6)
	for _, c := range []struct {
		name, options string
		wantChunk     bool
	}{{"not asked", "", false}, {"asked", `,"stream_options":{"include_usage":true}`, true}} {
		t.Run(c.name, func(t *testing.T) {
			resp, body, s := h.sent("/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream":true`+c.options+`}`, nil)
			if resp.StatusCode != 200 || int64(s.Cost) != want {
				t.Fatalf("POST = %d, charged %d µ, want 200 and %d", resp.StatusCode, s.Cost, want)
			}
			if got := strings.Contains(body, `"choices":[]`); got != c.wantChunk {
				t.Fatalf("usage chunk in the client's stream = %v, want %v:\n%s", got, c.wantChunk, body)
			}
			// The stream is otherwise whole: both deltas and the end marker, event by event.
			if !strings.Contains(body, `"content":"hel"`) || !strings.Contains(body, `"content":"lo"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Fatalf("client's stream lost events:\n%s", body)
			}
			reqs := h.up.Requests()
			if !strings.Contains(string(reqs[len(reqs)-1].Body), `"include_usage":true`) {
				t.Fatalf("upstream body %s: stream_options.include_usage not set", reqs[len(reqs)-1].Body)
			}
		})
	}
}

// K1: an error answer is not billed; count_tokens is free; a models list is local.
func TestMeterUnbilledK1(t *testing.T) {
	for _, c := range []struct{ name, method, path, body string }{
		{"error status", "POST", "/v1/messages", `{"max_tokens":100,"messages":[{"role":"user","content":"x"}]}`},
		{"count_tokens", "POST", "/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"x"}]}`},
		{"models", "GET", "/v1/models", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "claude", "", Limits{})
			h.up.SetUsage(standin.Usage{Input: 1e6, Output: 1e6})
			want := 200
			if c.name == "error status" {
				h.up.ForgetModels() // the fake answers 404 like the API for an unknown model
				want = 404
			}
			if resp, b := h.do(c.method, c.path, nil, c.body); resp.StatusCode != want {
				t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, resp.StatusCode, b, want)
			}
			h.proxy.meter.AnetTestSettled()
			if s := h.proxy.Usage().Spend; s.Cost != 0 || s.Responses != 0 {
				t.Fatalf("after %s: spend %+v, want nothing charged", c.name, s)
			}
		})
	}
}

// K1: an agent that hangs up before the answer cannot make a request free: once the request
// reached the upstream, the estimate is charged.
func TestMeterAgentHangsUpK1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	release := make(chan struct{})
	defer close(release)
	arrived := make(chan struct{}, 1)
	h.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		arrived <- struct{}{}
		<-release
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.front.URL+"/v1/messages", strings.NewReader(`{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Authorization", "Bearer "+h.ph)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-arrived
	cancel()
	<-done
	testkit.WaitFor(t, "the hung-up request to settle", func() bool { return h.proxy.Usage().Spend.Responses == 1 })
	est := ceilDiv(ceilDiv(h.lastBodyLen(), 3)*haikuCacheWrite+100*haikuOut, 1e6)
	if s := h.proxy.Usage().Spend; int64(s.Cost) != est || s.UsageMissing != 1 {
		t.Fatalf("spend after a hang-up = %+v, want the estimate %d, usage missing 1", s, est)
	}
}

// K2 at the edge: a request whose worst case fits exactly in what is left is forwarded; the
// same request once the first one's cost is spent is refused with spend_limit and a sentence
// naming the figures; a request with a lower output limit that fits again is forwarded.
func TestSpendLimitEdgeK2(t *testing.T) {
	body := func(maxTokens int) string {
		return fmt.Sprintf(`{"max_tokens":%d,"messages":[{"role":"user","content":"what is 6*7?"}]}`, maxTokens)
	}
	worst := func(e *rules.Engine, b string) int64 {
		d := e.Apply(rules.AnthropicMessages, hdr(), []byte(b))
		return ceilDiv(ceilDiv(int64(len(d.Body)), 3)*haikuCacheWrite+d.MaxOutput*haikuOut, 1e6)
	}
	e := mustEngine(t, "claude", "", "")
	w8192 := worst(e, body(8192))
	used := ceilDiv(1000*haikuIn+50*haikuOut, 1e6) // the fake's usage: 125 µ
	allowance := money.Micros(w8192)
	h := newHarness(t, "claude", "", Limits{}, func(o *Options) { o.Allowance = &allowance })
	h.up.SetUsage(standin.Usage{Input: 1000, Output: 50})

	if resp, b, s := h.sent("/v1/messages", body(8192), nil); resp.StatusCode != 200 || int64(s.Cost) != used {
		t.Fatalf("request with worst case = allowance (%d µ): %d %s, charged %d, want 200 and %d", w8192, resp.StatusCode, b, s.Cost, used)
	}
	resp, b, s := h.sent("/v1/messages", body(8192), nil)
	if resp.StatusCode != 400 || resp.Header.Get("X-Anet-Reason") != string(reasons.SpendLimit) || s.Cost != 0 {
		t.Fatalf("request over the allowance by %d µ: %d %s (charged %d), want 400 spend_limit", used, resp.StatusCode, b, s.Cost)
	}
	for _, fig := range []string{"anet: ", money.Micros(w8192).String(), "allowance " + allowance.String(), "spent " + money.Micros(used).String(), "claude-haiku-5-5"} {
		if !strings.Contains(b, fig) {
			t.Fatalf("refusal %s does not name %q", b, fig)
		}
	}
	// The largest max_tokens whose worst case fits in what is left, and one more.
	left := int64(allowance) - used
	fit := 8192
	for fit > 0 && worst(e, body(fit)) > left {
		fit--
	}
	if fit < 1024 {
		t.Fatalf("only max_tokens %d fits in %d µ: the test would prove little", fit, left)
	}
	if resp, b, _ := h.sent("/v1/messages", body(fit+1), nil); resp.StatusCode != 400 || !strings.Contains(b, string(reasons.SpendLimit)) && !strings.Contains(b, "spending allowance") {
		t.Fatalf("max_tokens %d (worst case %d > %d left): %d %s, want spend_limit", fit+1, worst(e, body(fit+1)), left, resp.StatusCode, b)
	}
	if resp, b, _ := h.sent("/v1/messages", body(fit), nil); resp.StatusCode != 200 {
		t.Fatalf("max_tokens %d (worst case %d ≤ %d left): %d %s, want 200", fit, worst(e, body(fit)), left, resp.StatusCode, b)
	}
	h.proxy.meter.AnetTestSettled()
	if u := h.proxy.Usage(); u.Refusals[reasons.SpendLimit] != 2 || u.Spend.Cost > allowance || *u.Spend.Allowance != allowance {
		t.Fatalf("usage = %+v, want 2 spend_limit refusals, spend ≤ allowance %d", u, allowance)
	}
}

// K2: concurrent requests of one run cannot together pass the allowance: each reserves its
// worst case before it leaves. With room for exactly three, three of ten simultaneous streams
// reach the upstream and seven are refused; the run's spend stays within the allowance.
func TestSpendLimitConcurrentK2(t *testing.T) {
	const b = `{"max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	e := mustEngine(t, "claude", "", "")
	d := e.Apply(rules.AnthropicMessages, hdr(), []byte(b))
	w := ceilDiv(ceilDiv(int64(len(d.Body)), 3)*haikuCacheWrite+d.MaxOutput*haikuOut, 1e6)
	allowance := money.Micros(3*w + w/2)
	h := newHarness(t, "claude", "", Limits{}, func(o *Options) { o.Allowance = &allowance })
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the fake's Close, which waits for its handlers
	h.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n")
		f.Flush()
		<-release
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":900}}\n\n")
	})
	statuses := make(chan int, 10)
	var all sync.WaitGroup
	for i := 0; i < 10; i++ {
		all.Add(1)
		go func() {
			defer all.Done()
			req, _ := http.NewRequest("POST", h.front.URL+"/v1/messages", strings.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+h.ph)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			br := bufio.NewReader(resp.Body)
			br.ReadString('\n')
			statuses <- resp.StatusCode
			io.Copy(io.Discard, br)
			resp.Body.Close()
		}()
	}
	// Every answer's status arrives while the admitted streams are still held open.
	refused, admitted := 0, 0
	deadline := time.After(60 * time.Second)
	for i := 0; i < 10; i++ {
		select {
		case s := <-statuses:
			if s == 400 {
				refused++
			} else if s == 200 {
				admitted++
			}
		case <-deadline:
			t.Fatalf("after %d answers (%d refused) no more came", i, refused)
		}
	}
	free()
	all.Wait()
	h.proxy.meter.AnetTestSettled()
	u := h.proxy.Usage()
	if refused != 7 || admitted != 3 || u.Refusals[reasons.SpendLimit] != 7 || len(h.up.Requests()) != 3 {
		t.Fatalf("%d refused (%d spend_limit), %d admitted, %d forwarded; want 7, 7, 3, 3", refused, u.Refusals[reasons.SpendLimit], admitted, len(h.up.Requests()))
	}
	each := ceilDiv(100*haikuIn+900*haikuOut, 1e6)
	if int64(u.Spend.Cost) != 3*each || u.Spend.Cost > allowance {
		t.Fatalf("spend %d µ, want 3 × %d within the allowance %d", u.Spend.Cost, each, allowance)
	}
}

// K1, K2: a run with an allowance needs prices; without an allowance an unpriced model is
// metered in tokens only.
func TestAllowanceNeedsPricesK1(t *testing.T) {
	up, _ := upstream.For("opencode", "https://llm.example/v1")
	cat, _ := rules.LoadCatalog("")
	e, err := rules.NewEngine(up, "local-model", cat)
	if err != nil {
		t.Fatal(err)
	}
	zero := money.Micros(0)
	_, err = New(e, up, Options{Placeholder: strings.Repeat("p", 32), Key: secret.New("k"), Allowance: &zero})
	if err == nil || !strings.Contains(err.Error(), string(reasons.ModelUnpriced)) {
		t.Fatalf("New(unpriced model, allowance) = %v, want %s", err, reasons.ModelUnpriced)
	}
	if _, err := New(e, up, Options{Placeholder: strings.Repeat("p", 32), Key: secret.New("k")}); err != nil {
		t.Fatalf("New(unpriced model, no allowance) = %v, want a proxy", err)
	}
}

// K1: when a run ends with an answer still streaming, its spend is made final at once: the
// open request is charged its worst case (the estimate), and its late settling adds nothing.
func TestFinishChargesInFlightK1(t *testing.T) {
	h := newHarness(t, "claude", "", Limits{})
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	started := make(chan struct{}, 1)
	h.up.SetStream(func(w http.ResponseWriter, f http.Flusher) {
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		f.Flush()
		started <- struct{}{}
		<-release
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.do("POST", "/v1/messages", nil, `{"max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	}()
	<-started
	h.proxy.Finish(10 * time.Millisecond)
	est := ceilDiv(ceilDiv(h.lastBodyLen(), 3)*haikuCacheWrite+100*haikuOut, 1e6)
	s := h.proxy.Usage().Spend
	if int64(s.Cost) != est || s.UsageMissing != 1 || s.Responses != 1 {
		t.Fatalf("spend after Finish with a stream open = %+v, want its estimate %d, usage missing 1", s, est)
	}
	free()
	<-done
	if s2 := h.proxy.Usage().Spend; s2.Cost != s.Cost || s2.Responses != 1 {
		t.Fatalf("spend after the stream settled late = %+v, want it unchanged %+v", s2, s)
	}
}
