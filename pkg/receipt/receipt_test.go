package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"anet.dev/anet/pkg/reasons"
)

var (
	opened = time.Date(2026, 3, 4, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	ended  = opened.Add(1500 * time.Millisecond)
)

// sample is a set with one receipt of each end, times in another zone than UTC.
func sample() Set {
	return Set{
		Tunnels: []Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "151.101.0.223:443", SNI: "pypi.org", Sent: 1200, Received: 54000, Opened: opened, Ended: ended, End: Closed},
			{Host: "evil.example.com", Port: 443, Opened: opened, Ended: opened, End: Refused, Code: "egress_host_not_allowed", Rule: "H4"},
			{Host: "pypi.org", Port: 443, Dialled: "151.101.0.223:443", SNI: "pypi.org", Sent: 32 << 20, Opened: opened, Ended: ended, End: Capped, Code: "egress_bytes_limit", Rule: "R1"},
		},
		Model: []Model{
			{API: "anthropic", Method: "POST", Path: "/v1/messages", Status: 200, Model: "claude-haiku-5-5", TokensIn: 1300, TokensOut: 40, Cost: 150, Started: opened, Ended: ended, End: Closed},
			{API: "openai", Method: "POST", Path: "/v1/responses", Status: 502, Model: "gpt-6", Started: opened, Ended: ended, End: Failed, Code: "upstream_unreachable", Rule: "E11"},
		},
		DroppedTunnels: 3,
	}
}

// normalised is s as Encode writes it and Decode reads it back.
func normalised(s Set) Set {
	s.Tunnels, s.Model = append([]Tunnel(nil), s.Tunnels...), append([]Model(nil), s.Model...)
	s.normalise()
	return s
}

// K1: Encode writes times in UTC without touching the caller's set; Decode reads back the
// same set; the digest is the SHA-256 of exactly the encoded bytes.
func TestEncodeDecodeRoundTripK1(t *testing.T) {
	s := sample()
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tunnels[0].Opened.Location().String() != "CET" {
		t.Fatal("Encode changed the caller's times")
	}
	if !bytes.Contains(b, []byte(`"opened":"2026-03-04T09:00:00.123456789Z"`)) {
		t.Fatalf("encoded times are not UTC: %s", b)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(Encode(s)): %v", err)
	}
	if want := normalised(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(Encode(s)) =\n%+v\nwant\n%+v", got, want)
	}
	again, err := Encode(got)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("re-encoding changed the bytes (%v):\n%s\n%s", err, b, again)
	}
	sum := sha256.Sum256(b)
	if d := Digest(b); d != "sha256:"+hex.EncodeToString(sum[:]) || Digest(again) != d {
		t.Fatalf("Digest = %s", d)
	}
	if Digest(nil) != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("Digest(nil) = %s", Digest(nil))
	}
}

// The JSON shape anetd and the store read: the field names of each receipt.
func TestEncodedShape(t *testing.T) {
	b, err := Encode(Set{Tunnels: sample().Tunnels[:1], Model: sample().Model[1:]})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string][]map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return fmt.Sprint(ks)
	}
	if got := keys(v["tunnels"][0]); got != "[bytes_received bytes_sent dialled end ended host opened port sni]" {
		t.Fatalf("tunnel keys %s", got)
	}
	if got := keys(v["model"][0]); got != "[api code cost_micros end ended method model path rule started status tokens_in tokens_out]" {
		t.Fatalf("model keys %s", got)
	}
	empty, _ := Encode(Set{})
	if string(empty) != "{}" {
		t.Fatalf("Encode(Set{}) = %s, want {}", empty)
	}
}

// An empty list decodes as none: Encode drops it (omitempty), so a set read back equals the
// set decoded.
func TestDecodeEmptyLists(t *testing.T) {
	s, err := Decode([]byte(`{"tunnels":[],"model":null}`))
	if err != nil || s.Tunnels != nil || s.Model != nil {
		t.Fatalf("Decode = %+v, %v; want no lists", s, err)
	}
	if o := Of([]Tunnel{}, 0, []Model{}, 2); o.Tunnels != nil || o.Model != nil || o.DroppedModel != 2 {
		t.Fatalf("Of = %+v", o)
	}
}

func TestCountsOf(t *testing.T) {
	s := sample()
	b, _ := Encode(s)
	c := CountsOf(s, b)
	if c != (Counts{Digest: Digest(b), Tunnels: 3, Model: 2, Refused: 1, Dropped: 3}) {
		t.Fatalf("CountsOf = %+v", c)
	}
}

// Validate refuses each bad value with an error naming the receipt and the field.
func TestValidateNamesField(t *testing.T) {
	long := strings.Repeat("a", MaxTextBytes+4)
	tun := func(f func(*Tunnel)) Set {
		s := sample()
		f(&s.Tunnels[1])
		return s
	}
	mod := func(f func(*Model)) Set {
		s := sample()
		f(&s.Model[1])
		return s
	}
	for _, c := range []struct {
		name string
		s    Set
		want string
	}{
		{"tunnel host", tun(func(t *Tunnel) { t.Host = long }), "tunnel 1: host, sni or dialled: too long"},
		{"tunnel sni", tun(func(t *Tunnel) { t.SNI = long }), "tunnel 1: host, sni or dialled"},
		{"tunnel dialled", tun(func(t *Tunnel) { t.Dialled = long[:MaxTextBytes+1] }), "tunnel 1: host, sni or dialled"},
		{"tunnel rule", tun(func(t *Tunnel) { t.Rule = strings.Repeat("H", 17) }), "tunnel 1: rule: too long"},
		{"tunnel port", tun(func(t *Tunnel) { t.Port = 65536 }), "tunnel 1: port 65536: out of range"},
		{"tunnel negative port", tun(func(t *Tunnel) { t.Port = -1 }), "tunnel 1: port -1"},
		{"tunnel bytes", tun(func(t *Tunnel) { t.Received = -1 }), "tunnel 1: bytes_sent or bytes_received: negative"},
		{"tunnel end", tun(func(t *Tunnel) { t.End = "gone" }), `tunnel 1: end "gone": not one of`},
		{"tunnel no end", tun(func(t *Tunnel) { t.End = "" }), `tunnel 1: end "": not one of`},
		{"tunnel no code", tun(func(t *Tunnel) { t.Code = "" }), `tunnel 1: end "refused": no code`},
		{"tunnel bad code", tun(func(t *Tunnel) { t.Code = "Egress-Host" }), `tunnel 1: code "Egress-Host": not a reason code`},
		{"tunnel long code", tun(func(t *Tunnel) { t.Code = reasons.Code(strings.Repeat("a", 65)) }), "tunnel 1: code"},
		{"tunnel times", tun(func(t *Tunnel) { t.Ended = t.Opened.Add(-time.Nanosecond) }), "tunnel 1: ended before opened"},
		{"tunnel year", tun(func(t *Tunnel) { t.Ended = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), "tunnel 1: opened or ended: not a time"},
		{"tunnel year 0 east of UTC", tun(func(t *Tunnel) {
			t.Opened = time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600))
		}), "tunnel 1: opened or ended"},
		{"model api", mod(func(m *Model) { m.API = long[:MaxTextBytes+1] }), "model request 1: api, method, path or model: too long"},
		{"model method", mod(func(m *Model) { m.Method = long[:MaxTextBytes+1] }), "model request 1: api, method, path or model"},
		{"model path", mod(func(m *Model) { m.Path = long }), "model request 1: api, method, path or model"},
		{"model model", mod(func(m *Model) { m.Model = long }), "model request 1: api, method, path or model"},
		{"model rule", mod(func(m *Model) { m.Rule = strings.Repeat("E", 17) }), "model request 1: rule: too long"},
		{"model status", mod(func(m *Model) { m.Status = 1000 }), "model request 1: status 1000: out of range"},
		{"model tokens", mod(func(m *Model) { m.TokensOut = -1 }), "model request 1: tokens or cost: negative"},
		{"model cost", mod(func(m *Model) { m.Cost = -1 }), "model request 1: tokens or cost"},
		{"model end", mod(func(m *Model) { m.End = "capped" }), `model request 1: end "capped"`},
		{"model no code", mod(func(m *Model) { m.Code = "" }), `model request 1: end "failed": no code`},
		{"model bad code", mod(func(m *Model) { m.Code = "spend limit" }), `model request 1: code "spend limit"`},
		{"model times", mod(func(m *Model) { m.Started = m.Ended.Add(time.Second) }), "model request 1: ended before started"},
		{"model year", mod(func(m *Model) { m.Started = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }), "model request 1: started or ended"},
		{"too many tunnels", Set{Tunnels: make([]Tunnel, MaxPerKind+1)}, "257 tunnels and 0 model requests, more than 256"},
		{"too many model requests", Set{Model: make([]Model, MaxPerKind+1)}, "0 tunnels and 257 model requests"},
		{"negative dropped", Set{DroppedModel: -1}, "receipts: negative dropped count"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want an error with %q", err, c.want)
			}
			b, _ := json.Marshal(c.s)
			if _, err := Decode(b); err == nil && !strings.Contains(c.name, "year") {
				t.Fatalf("Decode accepted what Validate refuses: %s", b)
			}
		})
	}
	if err := sample().Validate(); err != nil {
		t.Fatalf("Validate(sample) = %v", err)
	}
	// A closed receipt may say why it closed (the run's end).
	s := sample()
	s.Tunnels[0].Code, s.Tunnels[0].Rule = "egress_run_over", "R1"
	if err := s.Validate(); err != nil {
		t.Fatalf("closed with a code: %v", err)
	}
	if _, err := Decode([]byte(`{"tunnels":[{"port":"443"}]}`)); err == nil || !strings.Contains(err.Error(), "receipts: ") {
		t.Fatalf("Decode of a port as a string = %v", err)
	}
}

// Clip keeps agent text within MaxTextBytes, ellipsis included, and valid UTF-8, so that the
// receipt passes Validate again after a JSON round trip.
func TestClip(t *testing.T) {
	for _, s := range []string{"pypi.org", strings.Repeat("é", 300), strings.Repeat("\xff", 400), "a\xc3", strings.Repeat("a", MaxTextBytes)} {
		c := Clip(s)
		if len(c) > MaxTextBytes || !utf8.ValidString(c) {
			t.Fatalf("Clip(%q) = %q: %d bytes, valid %v", s, c, len(c), utf8.ValidString(c))
		}
		var back string
		b, _ := json.Marshal(c)
		if json.Unmarshal(b, &back); back != c {
			t.Fatalf("Clip(%q) = %q does not survive JSON: %q", s, c, back)
		}
		if len(s) <= MaxTextBytes && utf8.ValidString(s) && c != s {
			t.Fatalf("Clip(%q) = %q, want it unchanged", s, c)
		}
	}
}

func TestRuleOf(t *testing.T) {
	if RuleOf("") != "" || RuleOf("no_such_code_anywhere") != "" {
		t.Fatal("RuleOf of no code is not empty")
	}
	if got := RuleOf(reasons.SpendLimit); got != "K2" {
		t.Fatalf("RuleOf(spend_limit) = %q, want K2", got)
	}
}

// A run keeps at most MaxPerKind receipts of a kind and counts the rest, however many
// goroutines add at once; a snapshot is a copy.
func TestLogBoundsAtMaxPerKind(t *testing.T) {
	var l Log[Tunnel]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range (MaxPerKind + 40) / 8 {
				l.Add(Tunnel{Port: g*1000 + i})
			}
		}()
	}
	wg.Wait()
	items, dropped := l.Snapshot()
	if len(items) != MaxPerKind || dropped != 40 {
		t.Fatalf("kept %d, dropped %d; want %d and 40", len(items), dropped, MaxPerKind)
	}
	items[0].Host = "changed"
	if again, _ := l.Snapshot(); again[0].Host != "" {
		t.Fatal("Snapshot shares the log's storage")
	}
	var empty Log[Model]
	if items, dropped := empty.Snapshot(); items != nil || dropped != 0 {
		t.Fatalf("empty log snapshot = %v, %d", items, dropped)
	}
}

// bigSet is n receipts of each kind with every text field at its longest.
func bigSet(n int) Set {
	long := Clip(strings.Repeat("x", 1000))
	var s Set
	for i := range n {
		s.Tunnels = append(s.Tunnels, Tunnel{Host: long, Port: i, Dialled: "[2001:db8::1]:443", SNI: long, Opened: opened, Ended: ended, End: Refused, Code: "egress_sni_mismatch", Rule: "H6"})
		s.Model = append(s.Model, Model{API: "anthropic", Method: long, Path: long, Model: long, Status: 400, Started: opened, Ended: ended, End: Refused, Code: "field_not_allowed", Rule: "E2"})
	}
	return s
}

// Fit keeps a set within the bytes anetd's reply has room for: the earliest receipts of each
// kind, the rest counted as dropped; a set that fits is left as it is.
func TestFitBoundsTheEncoding(t *testing.T) {
	s := bigSet(MaxPerKind)
	s.DroppedModel = 5
	if b, _ := Encode(s); len(b) <= MaxEncodedBytes {
		t.Fatalf("the big set takes only %d bytes; the test proves nothing", len(b))
	}
	f := s.Fit(MaxEncodedBytes)
	b, err := Encode(f)
	if err != nil || len(b) > MaxEncodedBytes {
		t.Fatalf("fitted set: %d bytes (%v), want at most %d", len(b), err, MaxEncodedBytes)
	}
	if len(f.Tunnels) == 0 || len(f.Model) == 0 || len(f.Tunnels)+f.DroppedTunnels != MaxPerKind || len(f.Model)+f.DroppedModel != MaxPerKind+5 {
		t.Fatalf("fitted: %d tunnels (+%d dropped), %d model (+%d dropped)", len(f.Tunnels), f.DroppedTunnels, len(f.Model), f.DroppedModel)
	}
	if f.Tunnels[0].Port != 0 || f.Tunnels[len(f.Tunnels)-1].Port != len(f.Tunnels)-1 {
		t.Fatal("Fit did not keep the earliest tunnels")
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(s.Tunnels) != MaxPerKind || s.Tunnels[0].Opened.Location().String() != "CET" {
		t.Fatal("Fit changed the caller's set")
	}
	small := sample()
	if got := small.Fit(MaxEncodedBytes); !reflect.DeepEqual(got, normalised(small)) {
		t.Fatalf("Fit changed a set that fits:\n%+v", got)
	}
	if got := small.Fit(10); len(got.Tunnels)+len(got.Model) != 0 || got.DroppedTunnels != 3+3 || got.DroppedModel != 2 {
		t.Fatalf("Fit(10) = %+v, want every receipt dropped and counted", got)
	}
}

// A dropped count read from outside saturates rather than wrapping negative when Fit adds to it.
func TestFitSaturatesDropped(t *testing.T) {
	s := sample()
	s.DroppedTunnels = math.MaxInt
	if got := s.Fit(10); got.DroppedTunnels != math.MaxInt || got.Validate() != nil {
		t.Fatalf("Fit = %+v", got)
	}
}
