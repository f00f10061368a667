package peer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"anet.dev/anet/pkg/store"
)

// BenchmarkIntake measures tasks accepted per second at the inbox over a real TLS
// connection, each one committed durably (WAL, synchronous=FULL) with its evidence entry.
// "baseline" is a bare evidence Append of similar size on the same kind of store in the
// same run, so the ratio shows what the transport, the checks and the inbox row add.
func BenchmarkIntake(b *testing.B) {
	b.Run("tasks", func(b *testing.B) {
		unlimited := RateLimit{Burst: 1 << 30, PerMinute: 1 << 30}
		node := newTestNode(b, 2, Options{Rates: Rates{Stranger: unlimited, StrangerSource: unlimited, Strangers: unlimited}, Quota: &Quota{PerStranger: 1 << 40, Strangers: 1 << 40}})
		node.listen(b)
		k := newSeedKey(1)
		conn := node.dial(b, k)
		i := 0
		start := time.Now()
		for b.Loop() {
			i++
			sm := task(b, k, node.key.AID(), fmt.Sprintf("m-%d", i), fmt.Sprintf("ix-%d", i), "summarise this repository", time.Now())
			ack, err := conn.Send(sm)
			if err != nil || ack.Status != StatusAccepted {
				b.Fatalf("Send = %+v, %v", ack, err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	})
	b.Run("baseline", func(b *testing.B) {
		node := newTestNode(b, 2, Options{})
		ctx := context.Background()
		k := newSeedKey(1)
		i := 0
		start := time.Now()
		for b.Loop() {
			i++
			_, err := node.store.Append(ctx, node.key, store.EntryInput{Kind: "task_received", Peer: k.AID(), Interaction: fmt.Sprintf("ix-%d", i),
				Details: map[string]any{"msg_id": fmt.Sprintf("m-%d", i), "sent": time.Now(), "msg_sha256": "00", "text_bytes": 25}})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	})
}

// BenchmarkSignVerify measures signing and parsing (with signature check) of a 4 KiB task.
func BenchmarkSignVerify(b *testing.B) {
	k, to := newSeedKey(1), newSeedKey(2).AID()
	text := string(make([]byte, 4096))
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			task(b, k, to, "m-1", "ix-1", text, time.Now())
		}
	})
	sm := task(b, k, to, "m-1", "ix-1", text, time.Now())
	raw := sm.Raw()
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
