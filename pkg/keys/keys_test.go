package keys

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/config"
)

const keyValue = "sk-ant-api03-THIS-MUST-NEVER-PRINT"

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
	k, err := Load(write(t, "anthropic: "+keyValue+"\nopenai: sk-o\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(k.Configured(), ","); got != "anthropic,openai" {
		t.Fatalf("Configured() = %q", got)
	}
	if s, ok := k.Get("anthropic"); !ok || s.Reveal() != keyValue {
		t.Fatalf("Get(anthropic) = %v, %v", s.Reveal() == keyValue, ok)
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
			_, err := Load(write(t, "anthropic: "+keyValue+"\n", mode))
			var pe *config.PermError
			if !errors.As(err, &pe) || pe.Code != config.KeysFileExposed || !strings.Contains(err.Error(), "chmod 600") {
				t.Fatalf("Load(mode %04o) = %v, want keys_file_exposed with the fix", mode, err)
			}
		})
	}
	target := write(t, "anthropic: "+keyValue+"\n", 0o600)
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
		"key pasted as a provider name": keyValue + ": x\n",
		"key with white space":          "anthropic: " + keyValue + " tail\n",
		"not a mapping":                 "- " + keyValue + "\n",
		"broken yaml":                   "anthropic: [" + keyValue + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(write(t, content, 0o600))
			if err == nil {
				t.Fatal("Load accepted a malformed keys file")
			}
			if strings.Contains(err.Error(), keyValue) {
				t.Fatalf("error repeats the key: %v", err)
			}
		})
	}
}
