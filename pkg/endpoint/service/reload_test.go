package service

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"anet.dev/anet/pkg/keys"
)

// U3: the keys are read again on a reload; a file that is refused keeps the keys the helper
// had (and says why), so a bad edit never leaves running runs or new ones without a key.
func TestReloadKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys.yaml")
	write := func(content string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("openai: sk-o\n", 0o600)
	s := New(keys.Keys{}, dir, slog.New(slog.DiscardHandler))
	if v := s.LoadKeys(path); !v.OK {
		t.Fatalf("first load: %+v", v)
	}
	write("anthropic: sk-a\ncustom: sk-c\n", 0o600)
	if v := s.LoadKeys(path); !v.OK || !slices.Equal(v.Providers, []string{"anthropic", "custom"}) {
		t.Fatalf("reload of a good file = %+v, want anthropic and custom", v)
	}
	if got := s.KeysInfo()["providers_with_key"]; !slices.Equal(got.([]string), []string{"anthropic", "custom"}) {
		t.Fatalf("providers after reload = %v", got)
	}
	write("anthropic: sk-a\n", 0o644)
	v := s.LoadKeys(path)
	if v.OK || v.Code != "keys_file_exposed" || !slices.Equal(v.Providers, []string{"anthropic", "custom"}) {
		t.Fatalf("reload of an exposed file = %+v, want keys_file_exposed and the providers still in use", v)
	}
	info := s.KeysInfo()
	if got := info["providers_with_key"]; !slices.Equal(got.([]string), []string{"anthropic", "custom"}) || info["keys_code"] != "keys_file_exposed" {
		t.Fatalf("after a refused reload: %v; want the previous keys kept and the refusal shown", info)
	}
	if k, ok := s.currentKeys().Get("custom"); !ok || k.Reveal() != "sk-c" {
		t.Fatal("the previous keys are not the ones in use after a refused reload")
	}
}
