package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// thirdPeer is a third valid aid (seed 200..231).
const thirdPeer = "angk2t5cbohwvmdagxux3cetlbwzabwq7zahnqt4he3bgojzfcogfq"

func usage(t *testing.T, s *Store, peer string) Usage {
	t.Helper()
	u, err := s.IntakeUsage(context.Background(), peer)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// N1: every unanswered inbound task is charged its text plus TaskOverhead, per peer and in
// total, by the triggers; answering or refusing gives the charge back.
func TestIntakeUsageFollowsTasks(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	texts := []string{"a", strings.Repeat("é", 100), strings.Repeat("x", 5000)} // é: 2 bytes each
	var want int64
	for i, text := range texts {
		if _, err := s.Receive(ctx, signer, incoming("task", fmt.Sprintf("m-%d", i), fmt.Sprintf("ix-%d", i), text)); err != nil {
			t.Fatal(err)
		}
		want += int64(len(text)) + TaskOverhead
	}
	if got := usage(t, s, goldenPeer); got != (Usage{Tasks: 3, Bytes: want}) {
		t.Fatalf("usage = %+v, want 3 tasks, %d bytes (text bytes plus %d each)", got, want, TaskOverhead)
	}
	if got := usage(t, s, ""); got != (Usage{Tasks: 3, Bytes: want}) {
		t.Fatalf("total usage = %+v, want the same as the only peer's", got)
	}
	// A reply from this node answers ix-1; a refusal ix-0.
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "reply", MsgID: "r-1", Peer: goldenPeer, Interaction: "ix-1", Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "refusal", MsgID: "r-0", Peer: goldenPeer, Interaction: "ix-0", Code: "budget", Until: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := usage(t, s, goldenPeer); got != (Usage{Tasks: 1, Bytes: 5000 + TaskOverhead}) {
		t.Fatalf("usage after two answers = %+v, want only the 5000-byte task", got)
	}
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "reply", MsgID: "r-2", Peer: goldenPeer, Interaction: "ix-2", Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	var rows int
	s.DB().QueryRow(`SELECT COUNT(*) FROM intake_usage WHERE peer = ?`, goldenPeer).Scan(&rows)
	if got := usage(t, s, ""); got != (Usage{}) || rows != 0 {
		t.Fatalf("usage with every task answered = %+v (%d peer rows), want zero and the row gone", got, rows)
	}
	// Outbound tasks are not intake.
	if _, err := s.Queue(ctx, signer, Outgoing{Type: "task", MsgID: "o-1", Peer: goldenPeer, Interaction: "ix-out", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if got := usage(t, s, ""); got != (Usage{}) {
		t.Fatalf("usage after an outbound task = %+v, want zero", got)
	}
}

// N1: a stranger's task past its own quota or all strangers' is refused inside the
// transaction and stores nothing; the operator's peers do not count toward strangers.
func TestReceiveQuota(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	const text = 1000
	charge := int64(text + TaskOverhead)
	q := &IntakeQuota{PerStranger: 2 * charge, Strangers: 3 * charge}
	body := strings.Repeat("z", text)
	recv := func(peer, id string) error {
		in := incoming("task", id, "ix-"+id, body)
		in.Peer, in.Quota = peer, q
		_, err := s.Receive(ctx, signer, in)
		return err
	}
	// otherPeer is known: its tasks fill the total but are not a stranger's.
	if err := s.AddPeer(ctx, signer, otherPeer, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		in := incoming("task", fmt.Sprintf("k-%d", i), fmt.Sprintf("ix-k-%d", i), body)
		in.Peer = otherPeer
		if _, err := s.Receive(ctx, signer, in); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []error{nil, nil, ErrPeerQuota} {
		if err := recv(goldenPeer, fmt.Sprintf("g-%d", i)); !errors.Is(err, want) {
			t.Fatalf("stranger task %d = %v, want %v", i, err, want)
		}
	}
	var qe *QuotaError
	err := recv(thirdPeer, "t-0")
	if err != nil {
		t.Fatalf("another stranger's first task = %v, want room", err)
	}
	err = recv(thirdPeer, "t-1")
	if !errors.As(err, &qe) || qe.Err != ErrStrangersQuota || qe.Used != 3*charge || qe.Limit != 3*charge || qe.Charge != charge {
		t.Fatalf("task past all strangers' quota = %#v, want ErrStrangersQuota with the figures", err)
	}
	var n int
	s.DB().QueryRow(`SELECT COUNT(*) FROM interactions WHERE interaction IN ('ix-g-2', 'ix-t-1')`).Scan(&n)
	if n != 0 {
		t.Fatalf("%d refused tasks were stored", n)
	}
	if c, _ := s.Count(ctx, CountFilter{Kinds: []string{"task_received"}}); c != 7 {
		t.Fatalf("task_received entries = %d, want 7 (no entry for a refused task)", c)
	}
}

// The migration to version 3 charges the tasks already waiting, so an upgrade does not
// hand strangers a fresh quota.
func TestMigrationChargesWaitingTasks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anet.db")
	ctx := context.Background()
	s, err := open(ctx, path, migrations[:2])
	if err != nil {
		t.Fatal(err)
	}
	signer := newSeedSigner(1)
	for i := 0; i < 3; i++ {
		// Version 2's messages table has no src or at_unix: insert as that version did.
		if _, err := s.DB().Exec(`INSERT INTO interactions (peer, interaction, direction, state, text, task_msg_id, sent_at, created_at, created_unix)
			VALUES (?, ?, 'in', 'new', ?, ?, '', '', 0)`, goldenPeer, fmt.Sprintf("ix-%d", i), strings.Repeat("w", 100), fmt.Sprintf("m-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = signer
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := Usage{Tasks: 3, Bytes: 3 * (100 + TaskOverhead)}
	if got := usage(t, s, goldenPeer); got != want {
		t.Fatalf("usage after migration = %+v, want %+v", got, want)
	}
	if got := usage(t, s, ""); got != want {
		t.Fatalf("total after migration = %+v, want %+v", got, want)
	}
}

// RecentIncoming lists accepted inbound messages with their source, oldest first, from the
// given time on.
func TestRecentIncoming(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	s.now = stepClock(start, time.Second)
	for i, src := range []string{"192.0.2.1/32", "192.0.2.2/32", "2001:db8::/64"} {
		in := incoming("task", fmt.Sprintf("m-%d", i), fmt.Sprintf("ix-%d", i), "t")
		in.Src = src
		if _, err := s.Receive(ctx, signer, in); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RecentIncoming(ctx, start.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Src != "192.0.2.2/32" || got[1].Src != "2001:db8::/64" || got[0].Peer != goldenPeer || !got[0].At.Before(got[1].At) {
		t.Fatalf("RecentIncoming = %+v, want the last two in order", got)
	}
}

// The WAL stays near its size limit however much is written: a checkpoint runs past
// walCheckpointPages and the next write cuts the file back; Checkpoint empties it.
func TestWALStaysBounded(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	signer := newSeedSigner(1)
	wal := s.Path() + "-wal"
	body := strings.Repeat("v", 8000)
	var largest int64
	for i := 0; i < 600; i++ { // about 10 MiB written (text twice, evidence, indexes)
		if _, err := s.Receive(ctx, signer, incoming("task", fmt.Sprintf("m-%d", i), fmt.Sprintf("ix-%d", i), body)); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(wal); err == nil {
			largest = max(largest, st.Size())
		}
	}
	// One transaction past the checkpoint point, plus SQLite's frame headers.
	if limit := int64(walSizeLimit + 512<<10); largest > limit {
		t.Fatalf("WAL grew to %d bytes, want at most %d", largest, limit)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(wal); err != nil || st.Size() != 0 {
		t.Fatalf("WAL after Checkpoint = %v, %v, want 0 bytes", st, err)
	}
	if free, err := s.FreeBytes(); err != nil || free <= 0 {
		t.Fatalf("FreeBytes() = %d, %v, want the file system's free space", free, err)
	}
}
