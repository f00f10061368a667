package node

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/check"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/store"
)

// wallSeeds are wall_proved details as proveWall writes them, and entries it must refuse.
var wallSeeds = []string{
	`{"ok":true,"why":"daily","tier":"bwrap","version":"v1","items":[{"name":"sandbox.probe.loopback","ok":true,"detail":"127.0.0.1 answers","requirement":"S7"},{"name":"egress.CONNECT to an IP literal refused","ok":true,"detail":"403 Forbidden (anet: host_not_allowed)"}]}`,
	`{"ok":false,"why":"manual","tier":"vm","version":"v2","items":[{"name":"sandbox.attack.af_vsock","ok":false,"detail":"socket(AF_VSOCK) succeeded","requirement":"S4","code":"seccomp_failed","fix":"anet-sandboxd self-test"}]}`,
	`{"ok":true,"why":"start","tier":"bwrap","version":"v1","items":[{"name":"x","ok":false,"detail":""}]}`,
	`{"ok":true,"why":"start","tier":"bwrap","version":"v1","items":[]}`,
	`{"ok":true,"why":"start","tier":"bwrap","version":"v1","items":[{"name":"","ok":true,"detail":""}]}`,
	`{"ok":true,"why":"start","tier":"bwrap","version":"v1","items":[{"name":"x","ok":true,"detail":""}],"extra":1}`,
	`{"ok":true,"items":[{"name":"x","ok":true,"detail":""}]} {}`,
	`[]`,
}

// S7: a proof reads back from its entry as it was made; an entry whose verdict disagrees with
// its items, that has none, an unnamed item or a field no proof writes is refused, so that an
// altered entry cannot pass for a passing proof.
func TestWallDetailsRoundTripS7(t *testing.T) {
	items := []check.Check{
		{Name: "sandbox.probe.loopback", Requirement: "S7", OK: true, Detail: "ok"},
		{Name: "sandbox.attack.af_vsock", Requirement: "S4", OK: false, Code: reasons.SeccompFailed, Detail: "open", Fix: "fix it"},
		{Name: "egress.the key is in no log line", Requirement: "F3", OK: true, Detail: "6521 bytes"},
	}
	p := newWallProof(time.Time{}, "daily", "bwrap", "v1", items)
	raw, err := json.Marshal(wallDetailsOf(p))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseWallDetails(raw)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, p)
	}
	for _, bad := range wallSeeds[2:] {
		if _, err := parseWallDetails([]byte(bad)); err == nil {
			t.Errorf("parseWallDetails(%s) accepted it", bad)
		}
	}
}

// S7, F1: a wall_proved entry that cannot be read is a failed proof at start: sandboxed turns
// stay closed until a proof passes.
func TestUnreadableWallEntryIsAFailedProofS7(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := identity.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := st.Append(ctx, id, store.EntryInput{Kind: KindWallProved, Details: json.RawMessage(wallSeeds[2])})
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{store: st}
	if err := n.loadWall(ctx); err != nil {
		t.Fatal(err)
	}
	re := n.wallVerdict()
	if re == nil || re.Code != reasons.WallUnproven || !strings.Contains(re.Detail, "wall.entry failed") {
		t.Fatalf("verdict over an unreadable entry %d = %v, want wall_unproven naming it", e.Seq, re)
	}
}

// FuzzParseWallDetails: whatever an entry's details hold, reading them never panics, and what
// is accepted has the verdict of its items and reads back the same when written again.
func FuzzParseWallDetails(f *testing.F) {
	for _, s := range wallSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := parseWallDetails(raw)
		if err != nil {
			return
		}
		if p.OK != check.AllOK(p.Items) || len(p.Items) == 0 {
			t.Fatalf("accepted ok %v with items %+v", p.OK, p.Items)
		}
		again, err := json.Marshal(wallDetailsOf(p))
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseWallDetails(again)
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("written again and read: %+v, %v; want %+v", q, err, p)
		}
	})
}
