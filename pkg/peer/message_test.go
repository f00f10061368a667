package peer

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/canonical"
	"anet.dev/anet/pkg/reasons"
)

var goldenTime = time.Date(2026, 11, 29, 8, 0, 0, 500_000_000, time.UTC)

// The canonical encoding is the interoperability contract (see doc.go): these bytes and
// this signature must never change for anet-msg-v1.
func TestEncodingGolden(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(100)
	for _, tc := range []struct {
		name    string
		m       Message
		wantEnc string
		wantSig string
	}{
		{
			name:    "task",
			m:       Message{Type: TypeTask, ID: "m-1", From: a.AID(), To: b.AID(), Sent: goldenTime, Interaction: "ix-1", Text: "héllo", ReplyPort: 7420},
			wantEnc: goldenTaskEnc,
			wantSig: goldenTaskSig,
		},
		{
			name:    "budget refusal",
			m:       Message{Type: TypeRefusal, ID: "m-2", From: a.AID(), To: b.AID(), Sent: goldenTime, Interaction: "ix-1", Code: reasons.Budget, Until: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
			wantEnc: goldenRefusalEnc,
			wantSig: goldenRefusalSig,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := Sign(a, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(sm.Encoding); got != tc.wantEnc {
				t.Errorf("Encode(%s) = %s, want %s", tc.name, got, tc.wantEnc)
			}
			if got := hex.EncodeToString(sm.Sig); got != tc.wantSig {
				t.Errorf("Sign(%s) = %s, want %s", tc.name, got, tc.wantSig)
			}
			back, err := Parse(sm.Raw())
			if err != nil {
				t.Fatalf("Parse(Raw()) error = %v", err)
			}
			if back.Message != sm.Message {
				t.Errorf("Parse(Raw()) = %+v, want %+v", back.Message, sm.Message)
			}
		})
	}
}

// The layout of the golden task, field by field, as a second implementation reads it.
func TestEncodingLayout(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(100)
	sm, err := Sign(a, Message{Type: TypeTask, ID: "m-1", From: a.AID(), To: b.AID(), Sent: goldenTime, Interaction: "ix-1", Text: "héllo", ReplyPort: 7420})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = append(want, "anet-msg-v1"...)
	for _, f := range []string{"task", "m-1", a.AID(), b.AID(), "2026-11-29T08:00:00.5Z", "ix-1", "héllo", "", "", "7420"} {
		want = append(want, byte(len(f)>>24), byte(len(f)>>16), byte(len(f)>>8), byte(len(f)))
		want = append(want, f...)
	}
	if string(sm.Encoding) != string(want) {
		t.Fatalf("Encoding = %x, want %x", sm.Encoding, want)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(2)
	base := Message{Type: TypeTask, ID: "m-1", From: a.AID(), To: b.AID(), Sent: goldenTime, Interaction: "ix-1", Text: "x"}
	for _, tc := range []struct {
		name   string
		change func(*Message)
		want   string
	}{
		{"bad type", func(m *Message) { m.Type = "ping" }, "type:"},
		{"empty id", func(m *Message) { m.ID = "" }, "id:"},
		{"id with slash", func(m *Message) { m.ID = "a/b" }, "id:"},
		{"id too long", func(m *Message) { m.ID = strings.Repeat("a", 65) }, "id:"},
		{"bad from", func(m *Message) { m.From = "anxyz" }, "from:"},
		{"bad to", func(m *Message) { m.To = strings.ToUpper(b.AID()) }, "to:"},
		{"no sent", func(m *Message) { m.Sent = time.Time{} }, "sent:"},
		// Found by fuzzing: signed, then refused by every receiver's parser.
		{"sent after 9999", func(m *Message) { m.Sent = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "sent: year 10000 is outside 0000-9999"},
		{"sent before 0000", func(m *Message) { m.Sent = time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC) }, "sent: year -1 is outside 0000-9999"},
		{"sent after 9999 only in UTC", func(m *Message) {
			m.Sent = time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("west", -2*3600))
		}, "sent: year 10000"},
		{"until after 9999", func(m *Message) {
			m.Type = TypeRefusal
			m.Text = ""
			m.Code = reasons.Budget
			m.Until = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		}, "until: year 10000 is outside 0000-9999"},
		{"bad interaction", func(m *Message) { m.Interaction = "ix 1" }, "interaction:"},
		{"task without text", func(m *Message) { m.Text = "" }, "text:"},
		{"text too large", func(m *Message) { m.Text = strings.Repeat("a", MaxText+1) }, "text: 262145 bytes, more than the limit of 262144"},
		{"invalid utf8", func(m *Message) { m.Text = "\xff" }, "text:"},
		{"task with code", func(m *Message) { m.Code = "budget" }, "code"},
		{"refusal with text", func(m *Message) { m.Type = TypeRefusal; m.Code = "budget"; m.Until = goldenTime }, "text:"},
		{"budget without until", func(m *Message) { m.Type = TypeRefusal; m.Text = ""; m.Code = reasons.Budget }, "until:"},
		{"until without budget", func(m *Message) {
			m.Type = TypeRefusal
			m.Text = ""
			m.Code = reasons.SandboxUnavailable
			m.Until = goldenTime
		}, "until:"},
		{"bad code", func(m *Message) { m.Type = TypeRefusal; m.Text = ""; m.Code = "Budget!" }, "code:"},
		{"reply with port", func(m *Message) { m.Type = TypeReply; m.ReplyPort = 1 }, "reply_port:"},
		{"port out of range", func(m *Message) { m.ReplyPort = 70000 }, "reply_port:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			tc.change(&m)
			err := m.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, err := Sign(a, m); err == nil {
				t.Fatal("Sign accepted an invalid message")
			}
		})
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("Validate(valid task) = %v, want nil", err)
	}
}

// Any change to any byte of a signed message (encoding or signature) is refused.
func TestParseRefusesEveryTamperedByte(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(2)
	sm := task(t, a, b.AID(), "m-1", "ix-1", "transfer 10 coins", goldenTime)
	raw := sm.Raw()
	for i := range raw {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 0x01
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(raw with byte %d flipped) = nil error, want a refusal", i)
		}
	}
	// Flipping text bytes keeps the encoding valid: it must fail on the signature.
	i := strings.Index(string(raw), "coins")
	bad := append([]byte(nil), raw...)
	bad[i] = 'C'
	if _, err := Parse(bad); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("Parse(text changed) error = %v, want ErrBadSignature", err)
	}
}

func TestParseRefusesStructure(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(2)
	sm := task(t, a, b.AID(), "m-1", "ix-1", "x", goldenTime)
	other := newSeedKey(3)
	forged := append(append([]byte(nil), sm.Encoding...), other.Sign(sm.Encoding)...)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"short", []byte("anet"), "shorter than a signature"},
		{"wrong tag", append([]byte("anet-msg-v2"), sm.Raw()[11:]...), "does not start with"},
		{"trailing byte", append(append(append([]byte(nil), sm.Encoding...), 0), sm.Sig...), "after the last field"},
		{"truncated", sm.Raw()[:120], "past the end"},
		{"signed by another key", forged, ErrBadSignature.Error()},
		{"non-canonical time", resign(t, a, strings.Replace(string(sm.Encoding), "08:00:00.5Z", "08:00:00.50", 1)), "sent:"},
		// Each of these reads as a time or a port but is not the canonical text (or range),
		// so two encodings could carry one message.
		{"time with trailing zero", resignFields(t, a, "task", "m-1", a.AID(), b.AID(), "2026-11-29T08:00:00.50Z", "ix-1", "x", "", "", ""), "not a canonical RFC 3339 UTC time"},
		{"time with an offset", resignFields(t, a, "task", "m-1", a.AID(), b.AID(), "2026-11-29T08:00:00.5+00:00", "ix-1", "x", "", "", ""), "not a canonical RFC 3339 UTC time"},
		{"reply_port with a leading zero", resignFields(t, a, "task", "m-1", a.AID(), b.AID(), formatTime(goldenTime), "ix-1", "x", "", "", "07420"), "reply_port"},
		{"reply_port 0", resignFields(t, a, "task", "m-1", a.AID(), b.AID(), formatTime(goldenTime), "ix-1", "x", "", "", "0"), "reply_port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%s) = %v, want an error containing %q", tc.name, err, tc.want)
			}
		})
	}
}

// resignFields encodes the ten fields as given, unchecked, and signs them with k.
func resignFields(t *testing.T, k seedKey, fields ...string) []byte {
	t.Helper()
	return resign(t, k, string(canonical.Encode(msgTag, fields...)))
}

func resign(t *testing.T, k seedKey, enc string) []byte {
	t.Helper()
	return append([]byte(enc), k.Sign([]byte(enc))...)
}

func TestAckRoundTrip(t *testing.T) {
	for _, a := range []Ack{
		{Status: StatusAccepted, ID: "m-1"},
		{Status: StatusDuplicate, ID: "m-1", Code: CodeDuplicate},
		{Status: StatusRefused, ID: "", Code: CodeRateLimited, Detail: "limit"},
	} {
		t.Run(string(a.Status), func(t *testing.T) {
			got, err := parseAck(a.encode())
			if err != nil || got != a {
				t.Fatalf("parseAck(encode(%+v)) = %+v, %v", a, got, err)
			}
		})
	}
	if _, err := parseAck(canonical.Encode(ackTag, "refused", "m", "", "")); err == nil {
		t.Fatal("parseAck(refused without code) = nil error")
	}
	if _, err := parseAck(canonical.Encode(ackTag, "maybe", "m", "", "")); err == nil {
		t.Fatal("parseAck(unknown status) = nil error")
	}
	long := Ack{Status: StatusRefused, Code: CodeMalformed, Detail: strings.Repeat("d", 2*maxDetail)}
	if got, err := parseAck(long.encode()); err != nil || got.Detail != long.Detail[:maxDetail] {
		t.Fatalf("parseAck(encode(detail of %d bytes)) = %d bytes, %v; want cut to %d", len(long.Detail), len(got.Detail), err, maxDetail)
	}
}

// Sign refuses a message whose from is not the signing key's aid: a node cannot sign in
// another node's name, even by mistake.
func TestSignRefusesForeignFrom(t *testing.T) {
	a, b := newSeedKey(1), newSeedKey(2)
	m := Message{Type: TypeTask, ID: "m-1", From: b.AID(), To: a.AID(), Sent: goldenTime, Interaction: "ix-1", Text: "x"}
	if sm, err := Sign(a, m); err == nil || !strings.Contains(err.Error(), "is not the signing key's aid") {
		t.Fatalf("Sign(key A, from B) = %x, %v; want refused", sm.Raw(), err)
	}
}
