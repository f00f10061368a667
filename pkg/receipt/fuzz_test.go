package receipt

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzDecode: the bytes come from anet-egress or from the store file. Whatever Decode
// accepts is valid, encodes, decodes again to the same set, and re-encodes to the same bytes,
// so the digest the chain recorded can be checked against what the store keeps; fitted to a
// bound, it stays valid and every receipt is kept or counted.
func FuzzDecode(f *testing.F) {
	b, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{
		`{}`, `{"tunnels":[],"model":[]}`, `null`,
		`{"tunnels":[{"host":"pypi.org","port":443,"bytes_sent":1,"bytes_received":2,"opened":"2026-01-01T00:00:00+01:00","ended":"2026-01-01T00:00:01Z","end":"closed"}]}`,
		`{"tunnels":[{"host":"a\u0000\ud800","port":443,"opened":"0000-01-01T00:00:00+01:00","ended":"0000-01-01T00:00:00Z","end":"refused","code":"x"}]}`,
		"{\"model\":[{\"api\":\"\xff\xfe\",\"method\":\"POST\",\"path\":\"/v1\",\"status\":200,\"tokens_in\":1,\"tokens_out\":2,\"cost_micros\":3,\"started\":\"9999-12-31T23:59:59.999999999-01:00\",\"ended\":\"9999-12-31T23:59:59Z\",\"end\":\"cap\",\"code\":\"model_request_limit\",\"rule\":\"R1\"}]}",
		`{"Tunnels":[{"HOST":"x","end":"failed","code":"egress_dial_failed","opened":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z"}],"dropped_model":3,"dropped_tunnels":0}`,
		`{"model":[{"end":"closed","started":"2026-01-01T00:00:00Z","ended":"2026-01-01T00:00:00Z","status":-1}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Decode(%q) returned a set Validate refuses: %v", b, err)
		}
		enc, err := Encode(s)
		if err != nil {
			t.Fatalf("Decode(%q) returned a set Encode refuses: %v", b, err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(%q))) = %v\n%s", b, err, enc)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip changed the set:\n%+v\n%+v", s, again)
		}
		enc2, err := Encode(again)
		if err != nil || !bytes.Equal(enc, enc2) || Digest(enc) != Digest(enc2) {
			t.Fatalf("re-encoding changed the bytes (%v):\n%s\n%s", err, enc, enc2)
		}
		// Fitting to a bound keeps the set valid and within it, losing nothing uncounted.
		const bound = 1024
		fit := s.Fit(bound)
		fenc, err := Encode(fit)
		if err != nil || fit.Validate() != nil || (len(fenc) > bound && len(fit.Tunnels)+len(fit.Model) > 0) {
			t.Fatalf("Fit(%d) of %s = %s (%v)", bound, enc, fenc, err)
		}
		if len(fit.Tunnels)+fit.DroppedTunnels != len(s.Tunnels)+s.DroppedTunnels || len(fit.Model)+fit.DroppedModel != len(s.Model)+s.DroppedModel {
			t.Fatalf("Fit lost receipts uncounted: %+v from %+v", fit, s)
		}
	})
}
