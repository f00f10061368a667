package logging

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRedactsCredentialAttributes(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelDebug)
	const secret = "sk-ant-must-not-appear"
	for _, k := range []string{"token", "api_key", "Authorization", "control_token", "x-api-key", "placeholder"} {
		log.Info("m", k, secret)
	}
	log.Info("m", "path", "/kept/visible")
	if strings.Contains(buf.String(), secret) {
		t.Fatalf("secret in log output:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "/kept/visible") {
		t.Fatalf("ordinary attribute lost:\n%s", buf.String())
	}
}

// Keys that fold to a sensitive name under Unicode case rules are redacted too (the Kelvin
// sign folds to "k").
func TestRedactFoldsUnicodeKeys(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, slog.LevelDebug)
	const secret = "sk-ant-must-not-appear"
	for _, k := range []string{"\u212Aey", "API-\u212AEY", "Api_Key", "X-API-KEY"} {
		log.Info("m", k, secret)
	}
	if strings.Contains(buf.String(), secret) {
		t.Fatalf("secret in log output:\n%s", buf.String())
	}
}

// The async logger writes every record, in order, after Flush, with the same redaction; a
// logger derived with With shares the queue, so the order holds across both.
func TestAsyncKeepsOrderAndRedacts(t *testing.T) {
	var buf bytes.Buffer
	log, flush := NewJSONAsync(&buf, slog.LevelInfo)
	run := log.With("run", "r1")
	const secret = "sk-ant-must-not-appear"
	for i := range 5000 { // past maxQueued: Handle then writes the batch itself
		if i%2 == 0 {
			log.Info("m", "i", i, "api_key", secret)
		} else {
			run.Info("m", "i", i)
		}
	}
	log.Debug("below the level")
	flush()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5000 {
		t.Fatalf("%d lines written, want 5000", len(lines))
	}
	for i, l := range lines {
		if !strings.Contains(l, fmt.Sprintf(`"i":%d`, i)) || (i%2 == 1) != strings.Contains(l, `"run":"r1"`) {
			t.Fatalf("line %d = %s, want record %d", i, l, i)
		}
	}
	if strings.Contains(buf.String(), secret) {
		t.Fatal("secret in the async log")
	}
}

// Records reach the writer without a Flush, within the batching delay.
func TestAsyncWritesWithoutFlush(t *testing.T) {
	w := &lockedBuffer{}
	log, _ := NewJSONAsync(w, slog.LevelInfo)
	log.Info("first")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.String(), `"msg":"first"`) {
		if time.Now().After(deadline) {
			t.Fatal("the record was never written")
		}
		time.Sleep(time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
