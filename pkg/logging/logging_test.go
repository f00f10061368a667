package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
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
