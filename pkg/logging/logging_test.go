package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/control"
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

type testSecret struct{ v string }

func (s testSecret) Reveal() string { return s.v }

// TestRedactsSecretValuesNotNamesF3: the scrubber judges the value. A secret under an
// innocent key (a secret type, a model key inside an error or a string) is redacted; a count,
// flag or duration under a key that names a token is printed (the endpoint's
// refused_without_token count was logged as [redacted]).
func TestRedactsSecretValuesNotNamesF3(t *testing.T) {
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"
	redactedCases := []struct {
		name string
		attr slog.Attr
	}{
		{"secret type", slog.Any("value", testSecret{"custom-service-key-without-shape"})},
		{"key in a string", slog.String("detail", "upstream said: invalid x-api-key "+key)},
		{"key in an error", slog.Any("err", fmt.Errorf("401 from upstream: %s is not valid", key))},
		{"key in bytes", slog.Any("body", []byte(`{"error":"bad key `+key+`"}`))},
		{"openai key", slog.String("arg", "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345")},
		{"bytes under a token name", slog.Any("control_token", []byte("0123456789abcdef"))},
		{"string under a token name", slog.String("token", "0123456789abcdef")},
		{"control token in a string", slog.String("detail", "request with "+controlToken(t)+" refused")},
		{"control token in an error", slog.Any("err", fmt.Errorf("read %s: %w", controlToken(t), errors.New("x")))},
	}
	for _, c := range redactedCases {
		t.Run("redacts "+c.name, func(t *testing.T) {
			if got := Redact(nil, c.attr); got.Value.String() != redacted {
				t.Fatalf("Redact(%s=%v) = %v, want %s", c.attr.Key, c.attr.Value, got.Value, redacted)
			}
		})
	}
	kept := []slog.Attr{
		slog.Int("refused_without_token", 3),
		slog.Any("refused_without_token", float64(3)), // a helper's JSON line as anetd relays it
		slog.Int64("api_key", 0),
		slog.Uint64("secret", 7),
		slog.Bool("token", true),
		slog.Float64("password", 1.5),
		slog.Duration("token", time.Second),
		slog.String("task", "task-1 on disk-full host"),
		slog.String("path", "/home/u/.config/anet/sk-short"),
		slog.String("hash", "sk-"),
	}
	for _, a := range kept {
		t.Run("keeps "+a.Key+"="+a.Value.String(), func(t *testing.T) {
			if got := Redact(nil, a); !got.Equal(a) {
				t.Fatalf("Redact(%s=%v) = %v, want it kept", a.Key, a.Value, got.Value)
			}
		})
	}
	t.Run("through the logger", func(t *testing.T) {
		var buf bytes.Buffer
		New(&buf, slog.LevelInfo).Info("endpoint closed", "requests", 2, "refused_without_token", 5, "err", errors.New("echo "+key))
		if out := buf.String(); !strings.Contains(out, "refused_without_token=5") || strings.Contains(out, key) {
			t.Fatalf("log line = %q, want the count kept and the key gone", out)
		}
	})
}

// controlToken is a control token as anetd makes one: the scrubber must know it by its shape
// (F3), whatever key it travels under.
func controlToken(t *testing.T) string {
	t.Helper()
	tok, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, control.TokenPrefix) || !slices.Contains(keyPrefixes, control.TokenPrefix) {
		t.Fatalf("control token %q: the scrubber's prefixes %q lack its prefix %q", tok[:len(control.TokenPrefix)], keyPrefixes, control.TokenPrefix)
	}
	return tok
}
