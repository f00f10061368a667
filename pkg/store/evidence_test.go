package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 500_000_000, time.UTC)

// TestAppendVerifyRoundTrip: 1000 entries verify, and read back exactly as appended (B5: the
// chain the budget is rebuilt from is whole and faithful).
func TestAppendVerifyRoundTrip(t *testing.T) {
	s := openTemp(t)
	s.now = stepClock(t0, 1234567*time.Nanosecond)
	signer := newSeedSigner(1)
	ctx := context.Background()

	if res, err := s.Verify(ctx, signer.Public()); err != nil || res.Entries != 0 {
		t.Fatalf("Verify(empty) = %+v, %v; want 0 entries, nil", res, err)
	}
	if _, ok, err := s.Last(ctx); ok || err != nil {
		t.Fatalf("Last(empty) ok = %v, err = %v; want false, nil", ok, err)
	}

	want := appendN(t, s, signer, 1000)
	res, err := s.Verify(ctx, signer.Public())
	if err != nil {
		t.Fatalf("Verify() error = %v", err)
	}
	if res.Entries != 1000 || res.Head != want[999].Hash {
		t.Errorf("Verify() = %d entries, head %x; want 1000, %x", res.Entries, res.Head, want[999].Hash)
	}

	got, err := s.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("len(List()) = %d, want %d", len(got), len(want))
	}
	for i := range want {
		if !entriesEqual(got[i], want[i]) {
			t.Fatalf("List()[%d] = %+v, want %+v", i, got[i], want[i])
		}
		if got[i].Seq != int64(i+1) {
			t.Fatalf("List()[%d].Seq = %d, want %d", i, got[i].Seq, i+1)
		}
		if i > 0 && got[i].PrevHash != got[i-1].Hash {
			t.Fatalf("entry %d prev_hash = %x, want entry %d's hash %x", i+1, got[i].PrevHash, i, got[i-1].Hash)
		}
	}
	last, ok, err := s.Last(ctx)
	if err != nil || !ok || !entriesEqual(last, want[999]) {
		t.Errorf("Last() = %+v, %v, %v; want entry 1000", last, ok, err)
	}
}

func entriesEqual(a, b Entry) bool {
	return a.Seq == b.Seq && a.Time.Equal(b.Time) && a.Time.Location() == time.UTC &&
		a.Kind == b.Kind && a.Peer == b.Peer && a.Interaction == b.Interaction &&
		bytes.Equal(a.Details, b.Details) && a.PrevHash == b.PrevHash && a.Hash == b.Hash &&
		bytes.Equal(a.Sig, b.Sig)
}

// TestConcurrentAppendsGapless: 16 goroutines append at once; the chain has every sequence
// number once and verifies.
func TestConcurrentAppendsGapless(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	const goroutines, each = 16, 25
	runConcurrent(t, []*Store{s}, signer, goroutines, each)
	checkGapless(t, s, signer, goroutines*each)
}

// TestConcurrentAppendsTwoHandles: two independent handles on one file (as two processes
// would have) rely on SQLite's BEGIN IMMEDIATE alone, not on the in-process mutex.
func TestConcurrentAppendsTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anet.db")
	var stores []*Store
	for i := 0; i < 2; i++ {
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	signer := newSeedSigner(1)
	runConcurrent(t, stores, signer, 8, 20)
	checkGapless(t, stores[0], signer, 160)
}

func runConcurrent(t *testing.T, stores []*Store, signer Signer, goroutines, each int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := stores[g%len(stores)]
			for i := 0; i < each; i++ {
				if _, err := s.Append(ctx, signer, EntryInput{Kind: "task_received", Details: map[string]int{"g": g, "i": i}}); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Append error = %v", err)
	}
}

func checkGapless(t *testing.T, s *Store, signer Signer, n int) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Verify(ctx, signer.Public())
	if err != nil || res.Entries != int64(n) {
		t.Fatalf("Verify() = %d entries, %v; want %d, nil", res.Entries, err, n)
	}
	entries, err := s.List(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, e := range entries {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d, want %d (gap or duplicate)", i, e.Seq, i+1)
		}
		if seen[string(e.Details)] {
			t.Fatalf("details %s appended twice", e.Details)
		}
		seen[string(e.Details)] = true
	}
	if len(seen) != n {
		t.Errorf("distinct entries = %d, want %d", len(seen), n)
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	ctx := context.Background()
	tests := []struct {
		name string
		in   EntryInput
		want string
	}{
		{"details array", EntryInput{Kind: "x", Details: []int{1, 2}}, "details: must be a JSON object, got an array"},
		{"details string", EntryInput{Kind: "x", Details: "hello"}, "details: must be a JSON object, got a string"},
		{"details number", EntryInput{Kind: "x", Details: 42}, "details: must be a JSON object, got a number"},
		{"details bool", EntryInput{Kind: "x", Details: true}, "details: must be a JSON object, got a boolean"},
		{"details raw array", EntryInput{Kind: "x", Details: json.RawMessage(`[1]`)}, "details: must be a JSON object, got an array"},
		{"details raw invalid", EntryInput{Kind: "x", Details: json.RawMessage(`{"a":`)}, "details: not valid JSON"},
		{"details raw invalid UTF-8", EntryInput{Kind: "x", Details: json.RawMessage("{\"a\":\"\xff\"}")}, "details: not valid UTF-8"},
		{"details unmarshalable", EntryInput{Kind: "x", Details: map[string]any{"f": func() {}}}, "details: json: unsupported type"},
		{"details too large", EntryInput{Kind: "x", Details: map[string]string{"a": strings.Repeat("x", maxDetailsLen)}}, "more than the limit"},
		{"empty kind", EntryInput{Kind: ""}, "kind: must not be empty"},
		{"kind with upper case", EntryInput{Kind: "Task"}, "must match [a-z_]+"},
		{"kind with digit", EntryInput{Kind: "task2"}, "must match [a-z_]+"},
		{"kind with space", EntryInput{Kind: "task received"}, "must match [a-z_]+"},
		{"peer not an aid", EntryInput{Kind: "x", Peer: "bob"}, `peer "bob": not an aid`},
		{"peer upper case", EntryInput{Kind: "x", Peer: strings.ToUpper(goldenPeer)}, "not an aid"},
		{"interaction with newline", EntryInput{Kind: "x", Interaction: "a\nb"}, "control character"},
		{"interaction too long", EntryInput{Kind: "x", Interaction: strings.Repeat("i", 257)}, "longer than 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := s.Append(ctx, signer, tt.in)
			if err == nil {
				t.Fatalf("Append(%s) = entry %d, want error containing %q", tt.name, e.Seq, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Append(%s) error = %q, want it to contain %q", tt.name, err, tt.want)
			}
		})
	}
	if n, _ := s.Count(ctx, CountFilter{}); n != 0 {
		t.Errorf("Count() after refused appends = %d, want 0", n)
	}
}

func TestDetailsNormalisation(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	tests := []struct {
		name    string
		details any
		want    string
	}{
		{"nil", nil, `{}`},
		{"nil map", map[string]int(nil), `{}`},
		{"raw with spaces", json.RawMessage("{ \"b\" : 1,\n \"a\" : [ 1, 2 ] }"), `{"b":1,"a":[1,2]}`},
		{"map sorted", map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{"struct", struct {
			Counted bool `json:"counted"`
		}{true}, `{"counted":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := s.Append(context.Background(), signer, EntryInput{Kind: "x", Details: tt.details})
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Details) != tt.want {
				t.Errorf("details of Append(%v) = %s, want %s", tt.details, e.Details, tt.want)
			}
		})
	}
	if _, err := s.Verify(context.Background(), signer.Public()); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}

// TestGoldenEncoding pins the canonical encoding, hash and signature. The expected bytes are
// built here by hand from the package documentation, so the doc, the code and the golden
// values must all agree; an accidental change of the encoding breaks this test.
func TestGoldenEncoding(t *testing.T) {
	signer := newSeedSigner(1)
	e := Entry{
		Seq:         1,
		Time:        time.Date(2026, 11, 29, 8, 0, 0, 123456789, time.UTC),
		Kind:        "task_received",
		Peer:        goldenPeer,
		Interaction: "ix-0001",
		Details:     json.RawMessage(`{"bytes":512,"trusted":false}`),
	}
	var want []byte
	want = append(want, "anet-evidence-v1"...)
	for _, f := range []string{"1", "2026-11-29T08:00:00.123456789Z", "task_received", goldenPeer, "ix-0001",
		`{"bytes":512,"trusted":false}`, string(make([]byte, 32))} {
		want = binary.BigEndian.AppendUint32(want, uint32(len(f)))
		want = append(want, f...)
	}
	if got := CanonicalEncoding(e); !bytes.Equal(got, want) {
		t.Fatalf("CanonicalEncoding() =\n%x\nwant\n%x", got, want)
	}
	const (
		wantHash = goldenHash1
		wantSig  = goldenSig1
	)
	h := ComputeHash(e)
	if got := hex.EncodeToString(h[:]); got != wantHash {
		t.Errorf("ComputeHash() = %s, want %s", got, wantHash)
	}
	if got := hex.EncodeToString(signer.Sign(h[:])); got != wantSig {
		t.Errorf("signature = %s, want %s", got, wantSig)
	}

	// Trailing zeros of the fraction are dropped, a whole second has no fraction, and the
	// second entry links to the first.
	e2 := Entry{Seq: 2, Time: time.Date(2026, 11, 29, 8, 0, 1, 0, time.UTC), Kind: "turn_completed",
		Details: json.RawMessage(`{}`), PrevHash: h}
	if got := hex.EncodeToString(CanonicalEncoding(e2)); !strings.Contains(got, hex.EncodeToString([]byte("\x00\x00\x00\x142026-11-29T08:00:01Z\x00\x00\x00\x0eturn_completed\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02{}\x00\x00\x00\x20"))) {
		t.Errorf("CanonicalEncoding(entry 2) = %s, want whole-second time, empty peer and interaction", got)
	}
	h2 := ComputeHash(e2)
	if got := hex.EncodeToString(h2[:]); got != goldenHash2 {
		t.Errorf("ComputeHash(entry 2) = %s, want %s", got, goldenHash2)
	}
	if tm := time.Date(2026, 11, 29, 8, 0, 0, 120_000_000, time.UTC); formatTime(tm) != "2026-11-29T08:00:00.12Z" {
		t.Errorf("formatTime(%v) = %s, want 2026-11-29T08:00:00.12Z", tm, formatTime(tm))
	}

	// Append with the same clock produces exactly the golden entry.
	s := openTemp(t)
	s.now = func() time.Time { return e.Time.In(time.FixedZone("X", 3600)) } // the zone must not matter
	got, err := s.Append(context.Background(), signer, EntryInput{Kind: e.Kind, Peer: e.Peer, Interaction: e.Interaction,
		Details: json.RawMessage(`{"bytes": 512, "trusted": false}`)})
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got.Hash[:]) != wantHash || len(got.Sig) != 0 {
		t.Errorf("Append() hash %x sig %x, want the golden %s and no signature of its own", got.Hash, got.Sig, wantHash)
	}
	// The commit's checkpoint signs entry 1 at its time: the golden checkpoint encoding and
	// signature.
	var cpTime string
	var cpHash, cpSig []byte
	if err := s.DB().QueryRow(`SELECT time, hash, sig FROM evidence_checkpoints WHERE seq = 1`).Scan(&cpTime, &cpHash, &cpSig); err != nil {
		t.Fatalf("checkpoint of entry 1: %v", err)
	}
	enc := CheckpointEncoding(1, cpTime, h)
	wantEnc := "anet-evidence-checkpoint-v1" + "\x00\x00\x00\x011" + "\x00\x00\x00\x1e2026-11-29T08:00:00.123456789Z" + "\x00\x00\x00\x20" + string(h[:])
	if string(enc) != wantEnc || !bytes.Equal(cpHash, h[:]) {
		t.Errorf("CheckpointEncoding(1) = %q, want %q", enc, wantEnc)
	}
	if got := hex.EncodeToString(cpSig); got != goldenCheckpointSig1 {
		t.Errorf("checkpoint signature = %s, want %s", got, goldenCheckpointSig1)
	}
}

// Golden values. The hashes were also computed independently from the package doc with
// Python's hashlib (struct.pack(">I", len) + bytes per field), not only by this code.
const (
	goldenHash1 = "334734d7da7f877ae39e530138469a22c54c12e9f53fbfe96671dc20121d7619"
	goldenSig1  = "4eb0f5203f3ba83f12da3af508a7dde957acc0fb1805f59bd87e450efb1e97d9e85bf771f7c7ad111408878f6066f176d9fa9d1baf8b6ba586a86a6c50753803"
	goldenHash2 = "d3b2a863db6f2284b470258265b7194efb60d9cff89ad6e429f03f8de8c7adef"
	// goldenCheckpointSig1 is the signature of entry 1's checkpoint by the test key newSeedSigner(1).
	goldenCheckpointSig1 = "0d5a5fe1bbd02c5d445611e4b3eb50df4b4d652ee54a7019b80df99a402382c0009d46c866bb5129bfd0035ddf33d61c4097f7ae7762ced53595993c27247505"
)

// TestAppendTx: an entry written inside a caller's transaction exists only if it commits.
func TestAppendTx(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('inbox_row', 'x')`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendTx(ctx, tx, signer, EntryInput{Kind: "task_received"}); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		n, _ := s.Count(ctx, CountFilter{})
		_, rowOK, _ := s.Meta(ctx, "inbox_row")
		want := int64(0)
		if commit {
			want = 1
		}
		if n != want || rowOK != commit {
			t.Errorf("commit=%v: entries = %d, row present = %v; want %d, %v", commit, n, rowOK, want, commit)
		}
	}
	if _, err := s.Verify(ctx, signer.Public()); err != nil {
		t.Errorf("Verify() = %v", err)
	}
}

// TestAppendRefusesSecondKey: a chain signed by two keys could never verify, so the second
// key is refused at Append.
func TestAppendRefusesSecondKey(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	appendN(t, s, newSeedSigner(1), 1)
	if _, err := s.Append(ctx, newSeedSigner(9), EntryInput{Kind: "x"}); err == nil || !strings.Contains(err.Error(), "not the key of this chain") {
		t.Errorf("Append(other key) error = %v, want 'not the key of this chain'", err)
	}
	if _, err := s.Append(ctx, brokenSigner{newSeedSigner(1)}, EntryInput{Kind: "x"}); err == nil || !strings.Contains(err.Error(), "invalid signature") {
		t.Errorf("Append(broken signer) error = %v, want 'invalid signature'", err)
	}
	if n, _ := s.Count(ctx, CountFilter{}); n != 1 {
		t.Errorf("Count() = %d, want 1", n)
	}
}

type brokenSigner struct{ seedSigner }

func (b brokenSigner) Sign(msg []byte) []byte { sig := b.seedSigner.Sign(msg); sig[0] ^= 1; return sig }

func TestListAndCount(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	// One entry per hour from 08:00 (t0 has a .5 s fraction, which must not upset ordering).
	s.now = stepClock(t0, time.Hour)
	const other = "an" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	inputs := []EntryInput{
		{Kind: "task_received", Peer: goldenPeer},  // 08:00
		{Kind: "turn_completed", Peer: goldenPeer}, // 09:00
		{Kind: "task_received", Peer: other},       // 10:00
		{Kind: "openai_answered", Peer: other},     // 11:00
		{Kind: "turn_completed", Peer: other},      // 12:00
		{Kind: "turn_completed"},                   // 13:00
	}
	for _, in := range inputs {
		if _, err := s.Append(ctx, signer, in); err != nil {
			t.Fatal(err)
		}
	}
	at := func(h int) time.Time { return t0.Add(time.Duration(h-8) * time.Hour) }
	counts := []struct {
		name string
		f    CountFilter
		want int64
	}{
		{"all", CountFilter{}, 6},
		{"one kind", CountFilter{Kinds: []string{"turn_completed"}}, 3},
		{"two kinds", CountFilter{Kinds: []string{"turn_completed", "openai_answered"}}, 4},
		{"peer", CountFilter{Peer: other}, 3},
		{"kinds and peer", CountFilter{Kinds: []string{"turn_completed", "openai_answered"}, Peer: other}, 2},
		{"from inclusive", CountFilter{From: at(11)}, 3},
		{"to exclusive", CountFilter{To: at(11)}, 3},
		{"window", CountFilter{From: at(9), To: at(12)}, 3},
		{"window one ns after", CountFilter{From: at(9).Add(1), To: at(12)}, 2},
		{"window in another zone", CountFilter{From: at(9).In(time.FixedZone("X", -5*3600)), To: at(12)}, 3},
		{"empty window", CountFilter{From: at(14), To: at(20)}, 0},
	}
	for _, tt := range counts {
		t.Run("count "+tt.name, func(t *testing.T) {
			got, err := s.Count(ctx, tt.f)
			if err != nil || got != tt.want {
				t.Errorf("Count(%+v) = %d, %v; want %d", tt.f, got, err, tt.want)
			}
		})
	}
	if _, err := s.Count(ctx, CountFilter{Kinds: []string{"bad kind"}}); err == nil {
		t.Errorf("Count(bad kind) error = nil, want error")
	}

	lists := []struct {
		name string
		o    ListOptions
		want []int64
	}{
		{"all", ListOptions{}, []int64{1, 2, 3, 4, 5, 6}},
		{"since", ListOptions{Since: at(12)}, []int64{5, 6}},
		{"kind", ListOptions{Kind: "task_received"}, []int64{1, 3}},
		{"peer", ListOptions{Peer: goldenPeer}, []int64{1, 2}},
		{"limit", ListOptions{Limit: 2}, []int64{1, 2}},
		{"kind since limit", ListOptions{Kind: "turn_completed", Since: at(9), Limit: 2}, []int64{2, 5}},
		// A page of the timeline: the newest first page, then the one before it.
		{"newest page", ListOptions{Limit: 4, Newest: true}, []int64{3, 4, 5, 6}},
		{"page before", ListOptions{Limit: 4, Newest: true, Before: 3}, []int64{1, 2}},
		{"before", ListOptions{Before: 3}, []int64{1, 2}},
		{"newest of a kind", ListOptions{Kind: "turn_completed", Limit: 2, Newest: true}, []int64{5, 6}},
	}
	for _, tt := range lists {
		t.Run("list "+tt.name, func(t *testing.T) {
			got, err := s.List(ctx, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, e := range got {
				seqs = append(seqs, e.Seq)
			}
			if !equalInts(seqs, tt.want) {
				t.Errorf("List(%+v) seqs = %v, want %v", tt.o, seqs, tt.want)
			}
		})
	}
	if _, err := s.List(ctx, ListOptions{Limit: -1}); err == nil {
		t.Errorf("List(limit -1) error = nil, want error")
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// S7: LastOf is the newest entry of one kind, whatever came after it (anetd reads its last
// proof of the wall back at start), and none for a kind the chain does not hold.
func TestLastOf(t *testing.T) {
	s := openTemp(t)
	signer := newSeedSigner(1)
	ctx := context.Background()
	if _, ok, err := s.LastOf(ctx, "wall_proved"); ok || err != nil {
		t.Fatalf("LastOf(empty) ok = %v, err = %v; want false, nil", ok, err)
	}
	var want Entry
	for i, kind := range []string{"wall_proved", "node_started", "wall_proved", "operator_note"} {
		e, err := s.Append(ctx, signer, EntryInput{Kind: kind, Details: map[string]int{"i": i}})
		if err != nil {
			t.Fatal(err)
		}
		if kind == "wall_proved" {
			want = e
		}
	}
	got, ok, err := s.LastOf(ctx, "wall_proved")
	if err != nil || !ok || !entriesEqual(got, want) {
		t.Fatalf("LastOf(wall_proved) = %+v, %v, %v; want entry %d", got, ok, err, want.Seq)
	}
	if _, ok, err := s.LastOf(ctx, "turn_completed"); ok || err != nil {
		t.Fatalf("LastOf(turn_completed) ok = %v, err = %v; want false, nil", ok, err)
	}
	if _, _, err := s.LastOf(ctx, "Bad Kind"); err == nil {
		t.Fatal("LastOf(\"Bad Kind\") accepted a kind that is not [a-z_]+")
	}
}
