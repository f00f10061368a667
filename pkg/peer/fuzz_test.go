package peer

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/canonical"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/reasons"
)

// FuzzReadFrame (N1): a frame read from any bytes is 1..MaxFrame bytes, consumed exactly its
// header and payload, and writeFrame gives back the bytes it was read from; a header over the
// limit is refused after its 4 bytes, before any of the body is read or allocated.
func FuzzReadFrame(f *testing.F) {
	a, b := newSeedKey(1), newSeedKey(2)
	var buf bytes.Buffer
	if err := writeFrame(&buf, task(f, a, b.AID(), "m-1", "ix-1", "héllo", goldenTime).Raw()); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(binary.BigEndian.AppendUint32(nil, MaxFrame+1))
	f.Add(binary.BigEndian.AppendUint32(nil, MaxFrame))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 'd'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &testkit.CountingReader{R: bytes.NewReader(data)}
		p, err := readFrame(r)
		if len(data) >= 4 && binary.BigEndian.Uint32(data) > MaxFrame {
			var tl *FrameTooLargeError
			if !errors.As(err, &tl) || r.N != 4 {
				t.Fatalf("readFrame(header %x) = %v after %d bytes, want FrameTooLargeError after 4", data[:4], err, r.N)
			}
			return
		}
		if err != nil {
			return
		}
		if len(p) == 0 || len(p) > MaxFrame || r.N != 4+len(p) {
			t.Fatalf("readFrame = %d bytes after reading %d, want 1..%d after 4+payload", len(p), r.N, MaxFrame)
		}
		var out bytes.Buffer
		if err := writeFrame(&out, p); err != nil || !bytes.Equal(out.Bytes(), data[:r.N]) {
			t.Fatalf("writeFrame(readFrame(%x)) = %x, %v, want the bytes read", data[:r.N], out.Bytes(), err)
		}
	})
}

// FuzzParseAck (N1): an ack that parses has a known status, a code when refused, and
// re-encodes to the bytes it came from (its detail cut to maxDetail); parse∘encode is a
// fixpoint.
func FuzzParseAck(f *testing.F) {
	for _, a := range []Ack{
		{Status: StatusAccepted, ID: "m-1"},
		{Status: StatusDuplicate, ID: "m-1", Code: CodeDuplicate},
		{Status: StatusRefused, Code: CodeRateLimited, Detail: "limit"},
	} {
		f.Add(a.encode())
	}
	f.Add(canonical.Encode(ackTag, "refused", "m", "", ""))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := parseAck(data)
		if err != nil {
			return
		}
		if a.Status == StatusRefused && a.Code == "" || a.Delivered() != (a.Err() == nil) {
			t.Fatalf("parseAck(%x) = %+v: refused without code or Delivered/Err disagree", data, a)
		}
		enc := a.encode()
		if len(a.Detail) <= maxDetail && !bytes.Equal(enc, data) {
			t.Fatalf("encode(parseAck(%x)) = %x, want the same bytes", data, enc)
		}
		back, err := parseAck(enc)
		if err != nil || back.encode() == nil || !bytes.Equal(back.encode(), enc) {
			t.Fatalf("parseAck(encode(%+v)) = %+v, %v, want a fixpoint", a, back, err)
		}
	})
}

// FuzzParse (N1): whatever Parse accepts, or returns with a bad signature, is a valid
// message whose canonical encoding is exactly the bytes parsed: one message has one encoding,
// so the de-duplication key and the evidence digest cannot be varied by the sender.
func FuzzParse(f *testing.F) {
	a, b := newSeedKey(1), newSeedKey(2)
	f.Add(task(f, a, b.AID(), "m-1", "ix-1", "héllo", goldenTime).Raw())
	ref, err := Sign(a, Message{Type: TypeRefusal, ID: "m-2", From: a.AID(), To: b.AID(), Sent: goldenTime,
		Interaction: "ix-1", Code: reasons.Budget, Until: goldenTime.Add(time.Hour)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref.Raw())
	f.Add(append(canonical.Encode(msgTag, "task", "m-1", a.AID(), b.AID(), "2026-11-29T08:00:00.50Z", "ix-1", "x", "", "", "07420"), make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		sm, err := Parse(raw)
		if err != nil && sm.Encoding == nil {
			return
		}
		if err := sm.Validate(); err != nil {
			t.Fatalf("Parse(%x) returned an invalid message: %v", raw, err)
		}
		enc, encErr := sm.Message.Encode()
		if encErr != nil || !bytes.Equal(enc, sm.Encoding) || !bytes.Equal(sm.Raw(), raw) {
			t.Fatalf("Encode(Parse(%x)) = %x, %v, want the parsed encoding", raw, enc, encErr)
		}
		if verified := err == nil; verified != ed25519.Verify(fromKey(t, sm.From), sm.Encoding, sm.Sig) {
			t.Fatalf("Parse(%x) error = %v, but ed25519.Verify = %v", raw, err, !verified)
		}
		again, err2 := Parse(sm.Raw())
		if (err == nil) != (err2 == nil) || !sameMessage(again.Message, sm.Message) {
			t.Fatalf("Parse(Raw(Parse(x))) = %+v, %v, want %+v, %v", again.Message, err2, sm.Message, err)
		}
	})
}

// FuzzSignParse (N1): whatever the sender side accepts to sign, every receiver parses, to the
// same message and the same bytes. A message Sign accepts and Parse refuses is retried for
// ever and never delivered.
func FuzzSignParse(f *testing.F) {
	f.Add("task", "m-1", int64(goldenTime.Unix()), int64(500_000_000), "ix-1", "héllo", "", false, int64(0), int64(0), 7420)
	f.Add("reply", "m-2", int64(goldenTime.Unix()), int64(0), "ix-1", "ok", "", false, int64(0), int64(0), 0)
	f.Add("refusal", "m-3", int64(goldenTime.Unix()), int64(1), "ix-1", "", "budget", true, int64(goldenTime.Unix()+3600), int64(0), 0)
	f.Add("refusal", "m-4", int64(goldenTime.Unix()), int64(1), "ix-1", "", "sandbox_unavailable", false, int64(0), int64(0), 0)
	a, b := newSeedKey(1), newSeedKey(2)
	f.Fuzz(func(t *testing.T, typ, id string, sentSec, sentNsec int64, interaction, text, code string, hasUntil bool, untilSec, untilNsec int64, port int) {
		m := Message{Type: Type(typ), ID: id, From: a.AID(), To: b.AID(), Sent: time.Unix(sentSec, sentNsec),
			Interaction: interaction, Text: text, Code: reasons.Code(code), ReplyPort: port}
		if hasUntil {
			m.Until = time.Unix(untilSec, untilNsec)
		}
		sm, err := Sign(a, m)
		if err != nil {
			return
		}
		back, err := Parse(sm.Raw())
		if err != nil {
			t.Fatalf("Parse(Sign(%+v)) = %v, want the message", m, err)
		}
		if !sameMessage(back.Message, sm.Message) || !bytes.Equal(back.Encoding, sm.Encoding) {
			t.Fatalf("Parse(Sign(m)) = %+v, want %+v", back.Message, sm.Message)
		}
		if back.ContentDigest() != sm.ContentDigest() {
			t.Fatalf("ContentDigest changed across Parse for %+v", sm.Message)
		}
	})
}

func sameMessage(x, y Message) bool {
	return x.Sent.Equal(y.Sent) && x.Until.Equal(y.Until) && x.Until.IsZero() == y.Until.IsZero() &&
		x.Type == y.Type && x.ID == y.ID && x.From == y.From && x.To == y.To && x.Interaction == y.Interaction &&
		x.Text == y.Text && x.Code == y.Code && x.ReplyPort == y.ReplyPort
}

func fromKey(t *testing.T, aid string) ed25519.PublicKey {
	t.Helper()
	pub, err := identity.PublicKeyFromAID(aid)
	if err != nil {
		t.Fatalf("PublicKeyFromAID(%q) = %v after Validate accepted it", aid, err)
	}
	return pub
}
