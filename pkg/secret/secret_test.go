package secret

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const secret = "sk-ant-api03-THIS-MUST-NEVER-PRINT"

func TestSecretNeverFormats(t *testing.T) {
	s := New(secret)
	js, _ := json.Marshal(struct{ K Value }{s})
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("m", "k", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s), string(js), logBuf.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "THIS-MUST") {
			t.Fatalf("a Value printed its value: %s", out)
		}
	}
}
