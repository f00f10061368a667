// Package metering reads what each model answer used as it passes to the agent (K1) and holds
// a run's spend to its allowance (K2): the worst case of every request reserved before it
// leaves, settled on the answer's reported usage when it ends. It sees the agent's side of an
// answer only, redacted, and never a key.
package metering

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"

	"anet.dev/anet/pkg/modelproxy/jsontree"
	"anet.dev/anet/pkg/modelproxy/rules"
	"anet.dev/anet/pkg/modelproxy/upstream"
	"anet.dev/anet/pkg/money"
)

// maxUsageData bounds what is kept of one event's data, or of a JSON body, to read the usage
// in it. A larger one passes through unread, and its response is charged the estimate.
const maxUsageData = 4 << 20

// Answer is what one forwarded request's response reported, filled in as it passes.
type Answer struct {
	// sent: the transport had a connection for the request (httptrace), so it may have
	// reached the upstream and may be billed.
	sent atomic.Bool
	// status is the upstream's answer; 0 when none came.
	status int
	tokens money.Tokens
	haveIn bool
	final  bool
}

// MarkSent records that the transport had a connection for the request: from then on it may
// have reached the upstream, and may be billed. Safe to call from the transport's goroutine.
func (u *Answer) MarkSent() { u.sent.Store(true) }

// SetStatus records the upstream's answer.
func (u *Answer) SetStatus(status int) { u.status = status }

// Outcome: an error status is not billed; a request that reached the upstream and got a
// success, or no answer at all (the agent hung up, the connection broke), is.
func (u *Answer) Outcome() Outcome {
	billed := u.sent.Load() && (u.status == 0 || u.status/100 == 2)
	return Outcome{billed: billed, final: u.final, tokens: u.tokens}
}

// wireUsage is the usage object of the three APIs; absent fields stay nil.
type wireUsage struct {
	// Anthropic Messages: input excludes both cache classes.
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	// OpenAI Responses (input_tokens, output_tokens above): input includes cached tokens,
	// output includes reasoning tokens.
	InputDetails  *tokenDetails `json:"input_tokens_details"`
	OutputDetails *tokenDetails `json:"output_tokens_details"`
	// OpenAI Chat Completions: the same, under other names.
	PromptTokens      *int64        `json:"prompt_tokens"`
	CompletionTokens  *int64        `json:"completion_tokens"`
	PromptDetails     *tokenDetails `json:"prompt_tokens_details"`
	CompletionDetails *tokenDetails `json:"completion_tokens_details"`
}

type tokenDetails struct {
	Cached    *int64 `json:"cached_tokens"`
	Reasoning *int64 `json:"reasoning_tokens"`
}

func val(p *int64) (int64, bool) {
	if p == nil || *p < 0 {
		return 0, false
	}
	return *p, true
}

func detail(d *tokenDetails, f func(*tokenDetails) *int64) int64 {
	if d == nil {
		return 0
	}
	v, _ := val(f(d))
	return v
}

func cachedOf(d *tokenDetails) *int64    { return d.Cached }
func reasoningOf(d *tokenDetails) *int64 { return d.Reasoning }

// take records w. Anthropic streams report in two steps (message_start has the input,
// message_delta the final output and, lately, the final input too): each field present
// replaces the one before, and the usage is final with message_delta once the input is known.
// OpenAI reports once, complete; cached input is billed at the cache-read price.
func (u *Answer) take(api rules.API, w *wireUsage, final bool) {
	if api.Family() == upstream.FamilyAnthropic {
		for _, f := range []struct {
			v   *int64
			dst *int64
		}{{w.InputTokens, &u.tokens.Input}, {w.CacheCreation, &u.tokens.CacheWrite}, {w.CacheRead, &u.tokens.CacheRead}, {w.OutputTokens, &u.tokens.Output}} {
			if v, ok := val(f.v); ok {
				*f.dst = v
			}
		}
		if _, ok := val(w.InputTokens); ok {
			u.haveIn = true
		}
		_, haveOut := val(w.OutputTokens)
		u.final = u.final || (final && u.haveIn && haveOut)
		return
	}
	in, okIn := val(w.InputTokens)
	out, okOut := val(w.OutputTokens)
	inD, outD := w.InputDetails, w.OutputDetails
	if api == rules.OpenAIChat {
		in, okIn = val(w.PromptTokens)
		out, okOut = val(w.CompletionTokens)
		inD, outD = w.PromptDetails, w.CompletionDetails
	}
	if !okIn || !okOut {
		return
	}
	cached := min(detail(inD, cachedOf), in)
	u.tokens = money.Tokens{Input: in - cached, CacheRead: cached, Output: out, Reasoning: detail(outD, reasoningOf)}
	u.haveIn, u.final = true, final
}

// responsesFinal are the Responses stream events that end a response and carry its usage.
var responsesFinal = map[string]bool{"response.completed": true, "response.incomplete": true, "response.failed": true}

// event reads the usage from one streamed event's data; drop says the event is the usage
// chunk the node added to a chat stream (UsageAdded) and must not reach the client.
func (u *Answer) event(api rules.API, data []byte, strip bool) (drop bool) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	switch {
	case api.Family() == upstream.FamilyAnthropic:
		var ev struct {
			Type    string `json:"type"`
			Message *struct {
				Usage *wireUsage `json:"usage"`
			} `json:"message"`
			Usage *wireUsage `json:"usage"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return false
		}
		switch {
		case ev.Type == "message_start" && ev.Message != nil && ev.Message.Usage != nil:
			u.take(api, ev.Message.Usage, false)
		case ev.Type == "message_delta" && ev.Usage != nil:
			u.take(api, ev.Usage, true)
		}
	case api == rules.OpenAIChat:
		var ev struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   *wireUsage        `json:"usage"`
		}
		if json.Unmarshal(data, &ev) != nil || ev.Usage == nil {
			return false
		}
		u.take(api, ev.Usage, true)
		return strip && len(ev.Choices) == 0
	default:
		var ev struct {
			Type     string `json:"type"`
			Response *struct {
				Usage *wireUsage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &ev) == nil && responsesFinal[ev.Type] && ev.Response != nil && ev.Response.Usage != nil {
			u.take(api, ev.Response.Usage, true)
		}
	}
	return false
}

// body reads the usage of a whole JSON answer.
func (u *Answer) body(api rules.API, b []byte) {
	w, ok := fastUsage(b)
	if !ok {
		w = stdUsage(b)
	}
	if w != nil {
		u.take(api, w, true)
	}
}

// stdUsage is the usage of a JSON answer as encoding/json reads it; nil when there is none
// or the answer does not decode.
func stdUsage(b []byte) *wireUsage {
	var v struct {
		Usage *wireUsage `json:"usage"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v.Usage
}

// fastUsage reads the usage of a JSON answer in one pass that builds only the usage (the
// answer's content is checked and skipped, the counts go straight into a wireUsage). ok is
// false whenever it cannot be sure to read what stdUsage reads — not a well-formed object, a
// usage field twice (encoding/json merges duplicated objects into one struct), a key that
// matches a field only in case, a count that is not a plain integer — and stdUsage then
// decides.
func fastUsage(b []byte) (*wireUsage, bool) {
	s := jsontree.NewScanner(b)
	if !s.Open(0) {
		return nil, false
	}
	var usage *wireUsage
	seen := false
	if !s.Closes('}') {
		for {
			k, ok := s.Key()
			if !ok {
				return nil, false
			}
			switch {
			case string(k) == "usage" && !seen:
				seen = true
				if usage, ok = usageObject(s); !ok {
					return nil, false
				}
			case bytes.EqualFold(k, []byte("usage")):
				return nil, false
			default:
				if !s.Skip(1) {
					return nil, false
				}
			}
			more, ok := s.Sep('}')
			if !ok {
				return nil, false
			}
			if !more {
				break
			}
		}
	}
	if !s.End() {
		return nil, false
	}
	return usage, true
}

// usageObject reads a usage value (null or an object) as encoding/json fills a *wireUsage;
// ok is false for anything it leaves to encoding/json (see fastUsage).
func usageObject(s *jsontree.Scanner) (*wireUsage, bool) {
	w := &wireUsage{}
	null, ok := members(s, 1, func(k []byte) bool {
		switch string(k) {
		case "input_tokens":
			return count(s, &w.InputTokens)
		case "output_tokens":
			return count(s, &w.OutputTokens)
		case "cache_creation_input_tokens":
			return count(s, &w.CacheCreation)
		case "cache_read_input_tokens":
			return count(s, &w.CacheRead)
		case "prompt_tokens":
			return count(s, &w.PromptTokens)
		case "completion_tokens":
			return count(s, &w.CompletionTokens)
		case "input_tokens_details":
			return details(s, &w.InputDetails)
		case "output_tokens_details":
			return details(s, &w.OutputDetails)
		case "prompt_tokens_details":
			return details(s, &w.PromptDetails)
		case "completion_tokens_details":
			return details(s, &w.CompletionDetails)
		}
		return !foldsToUsageField(string(k)) && s.Skip(2)
	})
	if !ok || null {
		return nil, ok
	}
	return w, true
}

// details reads a token-details value (null or an object) into *dst.
func details(s *jsontree.Scanner, dst **tokenDetails) bool {
	d := &tokenDetails{}
	null, ok := members(s, 2, func(k []byte) bool {
		switch string(k) {
		case "cached_tokens":
			return count(s, &d.Cached)
		case "reasoning_tokens":
			return count(s, &d.Reasoning)
		}
		return !foldsToUsageField(string(k)) && s.Skip(3)
	})
	switch {
	case !ok:
		return false
	case null:
		*dst = nil
	default:
		*dst = d
	}
	return true
}

// members reads null, or an object whose members member reads from their values on. A name
// seen twice is left to encoding/json, so that no field is ever set twice here.
func members(s *jsontree.Scanner, depth int, member func(k []byte) bool) (null, ok bool) {
	if s.Peek() == 'n' {
		return true, s.Null()
	}
	if !s.Open(depth) {
		return false, false
	}
	if s.Closes('}') {
		return false, true
	}
	var small [12][]byte
	names := small[:0]
	for {
		k, ok := s.Key()
		if !ok {
			return false, false
		}
		for _, n := range names {
			if bytes.Equal(n, k) {
				return false, false
			}
		}
		names = append(names, k)
		if !member(k) {
			return false, false
		}
		more, ok := s.Sep('}')
		if !ok || !more {
			return false, ok
		}
	}
}

// count reads an integer, or null, into *dst, as encoding/json fills an *int64.
func count(s *jsontree.Scanner, dst **int64) bool {
	c := s.Peek()
	if c == 'n' {
		*dst = nil
		return s.Null()
	}
	if c != '-' && (c < '0' || c > '9') {
		return false
	}
	n, ok := s.Number()
	if !ok {
		return false
	}
	i, err := n.Int64()
	if err != nil {
		return false
	}
	*dst = &i
	return true
}

// usageFields are the JSON names of wireUsage and tokenDetails; encoding/json matches them
// ignoring case, so a key that differs only in case is left to it.
var usageFields = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
	"prompt_tokens", "completion_tokens", "input_tokens_details", "output_tokens_details", "prompt_tokens_details",
	"completion_tokens_details", "cached_tokens", "reasoning_tokens"}

func foldsToUsageField(k string) bool {
	for _, f := range usageFields {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

// Reader passes a response body through to the agent and reads the usage in it as it
// passes (K1), so nothing is buffered on the way: bytes are returned as soon as they are read,
// and parsed on the side (a data line is decoded only if it mentions "usage"). Only in strip
// mode does it hold bytes, one event at a time, to take out the usage chunk the node added.
type Reader struct {
	rc    io.ReadCloser
	api   rules.API
	st    *Answer
	sse   bool
	strip bool

	line, data         []byte // a line cut by a read, the current event's usage data (or a JSON body)
	lineOver, dataOver bool   // past maxUsageData: not kept, not read

	// strip mode only
	raw    []byte // the current event's bytes, held until it ends
	passed bool   // the current event grew past maxUsageData and is passed on as it comes
	out    []byte // bytes ready for the agent
	err    error  // the body's end, returned once out is drained

	ended bool
}

// NewReader reads the usage of body, an answer of api, into a as it passes: an event stream
// (sse) line by line, any other answer as one JSON body at its end. In strip mode (sse only)
// it is the body the agent reads, whole events less the usage chunk the node added
// (Decision.UsageAdded); otherwise the caller feeds it what the agent was sent, and ends it.
func NewReader(body io.ReadCloser, api rules.API, a *Answer, sse, strip bool) *Reader {
	return &Reader{rc: body, api: api, st: a, sse: sse, strip: strip}
}

// Read is the strip mode's body: whole events, less the one the node added.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.out) == 0 && r.err == nil {
		n, err := r.rc.Read(p)
		r.Feed(p[:n])
		if err != nil {
			r.End()
			r.err = err
		}
	}
	if len(r.out) == 0 {
		return 0, r.err
	}
	n := copy(p, r.out)
	r.out = r.out[:copy(r.out, r.out[n:])]
	return n, nil
}

func (r *Reader) Close() error { return r.rc.Close() }

// Feed reads b, the next bytes of the answer; it keeps no slice of b.
func (r *Reader) Feed(b []byte) {
	if !r.sse {
		r.data, r.dataOver = keep(r.data, b, r.dataOver)
		return
	}
	if len(r.data) == 0 && !r.dataOver && len(r.line) == 0 && !r.lineOver && !r.strip &&
		len(b) > 0 && b[len(b)-1] == '\n' && !bytes.Contains(b, usageKey) {
		// Whole lines, no usage among them, no event in progress that had some: nothing
		// here can change the usage (the common case: a text delta).
		return
	}
	for len(b) > 0 {
		seg := b
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			seg = b[:i+1]
		}
		b = b[len(seg):]
		if r.strip {
			if r.passed {
				r.out = append(r.out, seg...)
			} else if r.raw = append(r.raw, seg...); len(r.raw) > maxUsageData {
				r.out, r.raw, r.passed = append(r.out, r.raw...), r.raw[:0], true
			}
		}
		if i < 0 {
			// A line cut by the read: kept until its end arrives (rare: the upstream
			// flushes whole events).
			r.line, r.lineOver = keep(r.line, seg, r.lineOver)
			return
		}
		line := seg[:len(seg)-1]
		if len(r.line) > 0 || r.lineOver {
			r.line, r.lineOver = keep(r.line, line, r.lineOver)
			line = r.line
		}
		r.lineEnd(line, r.lineOver)
		r.line, r.lineOver = r.line[:0], false
	}
}

// keep appends b to buf unless that passes maxUsageData; over reports that something was
// left out (and stays set until the buffer is reset).
func keep(buf, b []byte, over bool) ([]byte, bool) {
	if over || len(buf)+len(b) > maxUsageData {
		return buf, true
	}
	return append(buf, b...), false
}

var usageKey = []byte(`"usage"`)

// lineEnd handles one complete SSE line, read in place: a blank line ends the event; a data
// line is kept only if it mentions "usage" (or continues an event that did), so the text
// deltas that make up most of a stream are looked at once and never copied.
func (r *Reader) lineEnd(line []byte, over bool) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	switch {
	case len(line) == 0 && !over:
		r.eventEnd()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if len(r.data) == 0 && !r.dataOver && !over && !bytes.Contains(d, usageKey) {
			return
		}
		if len(r.data) > 0 {
			r.data, r.dataOver = keep(r.data, []byte("\n"), r.dataOver)
		}
		r.data, r.dataOver = keep(r.data, d, r.dataOver || over)
	}
}

func (r *Reader) eventEnd() {
	drop := false
	if len(r.data) > 0 && !r.dataOver {
		drop = r.st.event(r.api, r.data, r.strip) && !r.passed
	}
	if r.strip && !drop {
		r.out = append(r.out, r.raw...)
	}
	r.raw, r.data, r.dataOver, r.passed = r.raw[:0], r.data[:0], false, false
}

// End reads what is left at the end of the body: a JSON answer, or a last event without its
// blank line. Called again, it does nothing.
func (r *Reader) End() {
	if r.ended {
		return
	}
	r.ended = true
	if !r.sse {
		if !r.dataOver {
			r.st.body(r.api, r.data)
		}
		r.data = nil
		return
	}
	if len(r.line) > 0 || r.lineOver {
		r.lineEnd(r.line, r.lineOver)
		r.line, r.lineOver = r.line[:0], false
	}
	r.eventEnd()
}
