package keys

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/config"
)

const secret = "sk-ant-api03-THIS-MUST-NEVER-PRINT"

func write(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
	return p
}

func TestLoad(t *testing.T) {
	k, err := Load(write(t, "anthropic: "+secret+"\nopenai: sk-o\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(k.Configured(), ","); got != "anthropic,openai" {
		t.Fatalf("Configured() = %q", got)
	}
	if s, ok := k.Get("anthropic"); !ok || s.Reveal() != secret {
		t.Fatalf("Get(anthropic) = %v, %v", s.Reveal() == secret, ok)
	}
	if _, ok := k.Get("custom"); ok {
		t.Fatal("Get(custom) found a key that is not there")
	}
	missing, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	if err != nil || len(missing.Configured()) != 0 {
		t.Fatalf("Load(missing) = %v, %v; want no keys and no error", missing.Configured(), err)
	}
}

// Like ssh: a keys file others can read, another's file or a link is refused before a byte is read.
func TestLoadRefusesExposedFiles(t *testing.T) {
	for _, mode := range []os.FileMode{0o640, 0o644, 0o604, 0o660} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			_, err := Load(write(t, "anthropic: "+secret+"\n", mode))
			var pe *config.PermError
			if !errors.As(err, &pe) || pe.Code != config.KeysFileExposed || !strings.Contains(err.Error(), "chmod 600") {
				t.Fatalf("Load(mode %04o) = %v, want keys_file_exposed with the fix", mode, err)
			}
		})
	}
	target := write(t, "anthropic: "+secret+"\n", 0o600)
	link := filepath.Join(t.TempDir(), "link.yaml")
	os.Symlink(target, link)
	var pe *config.PermError
	if _, err := Load(link); !errors.As(err, &pe) || pe.Code != config.KeysFileInvalid || !strings.Contains(err.Error(), "is a symlink") {
		t.Fatalf("Load(symlink) = %v, want keys_file_invalid naming the symlink", err)
	}
}

// No error, whatever the file holds, repeats a key.
func TestErrorsNeverCarryTheKey(t *testing.T) {
	for name, content := range map[string]string{
		"key pasted as a provider name": secret + ": x\n",
		"key with white space":          "anthropic: " + secret + " tail\n",
		"not a mapping":                 "- " + secret + "\n",
		"broken yaml":                   "anthropic: [" + secret + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(write(t, content, 0o600))
			if err == nil {
				t.Fatal("Load accepted a malformed keys file")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error repeats the key: %v", err)
			}
		})
	}
}

func TestSecretNeverFormats(t *testing.T) {
	s := NewSecret(secret)
	js, _ := json.Marshal(struct{ K Secret }{s})
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("m", "k", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s), string(js), logBuf.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, "THIS-MUST") {
			t.Fatalf("a Secret printed its value: %s", out)
		}
	}
}
