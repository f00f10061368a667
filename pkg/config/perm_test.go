package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// otherUID is a uid that is not the test's; chown to it needs root, which CI has.
const otherUID = 65534

func chownOther(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		t.Fatalf("this test needs root to give %s to uid %d (CI runs as root): %v", path, otherUID, err)
	}
}

func TestEnsurePrivateDir(t *testing.T) {
	t.Run("creates missing parents and dir 0700", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b", "anet")
		if err := EnsurePrivateDir(dir); err != nil {
			t.Fatalf("EnsurePrivateDir(%s) = %v", dir, err)
		}
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
				t.Fatalf("mode of %s = %v, %v, want drwx------", d, fi.Mode(), err)
			}
		}
		if err := EnsurePrivateDir(dir); err != nil {
			t.Fatalf("EnsurePrivateDir(existing 0700) = %v, want nil", err)
		}
	})
	refusals := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  string
	}{
		{"0755 dir", func(t *testing.T, p string) { mkdirMode(t, p, 0o755) },
			"private dir PATH is accessible by group or others (mode 0755); run chmod 700 PATH"},
		{"0710 dir", func(t *testing.T, p string) { mkdirMode(t, p, 0o710) }, "(mode 0710); run chmod 700 PATH"},
		{"0701 dir", func(t *testing.T, p string) { mkdirMode(t, p, 0o701) }, "(mode 0701); run chmod 700 PATH"},
		{"symlink to a private dir", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "real")
			mkdirMode(t, target, 0o700)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, "private dir PATH is a symlink; it must be a real directory"},
		{"regular file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "private dir PATH is not a directory"},
		{"another user's dir", func(t *testing.T, p string) {
			mkdirMode(t, p, 0o700)
			chownOther(t, p)
		}, fmt.Sprintf("private dir PATH is owned by uid %d, not by the current user (uid %d)", otherUID, os.Getuid())},
	}
	for _, r := range refusals {
		t.Run("refuses "+r.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "anet")
			r.setup(t, path)
			err := EnsurePrivateDir(path)
			want := strings.ReplaceAll(r.want, "PATH", path)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("EnsurePrivateDir = %v, want %q", err, want)
			}
			var pe *PermError
			if !errors.As(err, &pe) || pe.Code != PrivateDirUnsafe {
				t.Fatalf("EnsurePrivateDir error %#v, want *PermError with code %s", err, PrivateDirUnsafe)
			}
		})
	}
}

func mkdirMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// F3: the keys file must be a regular file of this user, not a symlink, with no access for
// others; a missing file is not an error (anet-egress then runs with no keys).
func TestKeysFileRule(t *testing.T) {
	t.Run("missing is no keys", func(t *testing.T) {
		if err := checkKeysFile(filepath.Join(t.TempDir(), "keys.yaml")); err != nil {
			t.Fatalf("checkKeysFile(missing) = %v, want nil", err)
		}
	})
	for _, mode := range []os.FileMode{0o600, 0o400, 0o200, 0o700} {
		t.Run(fmt.Sprintf("allows %04o", mode), func(t *testing.T) {
			path := writeKeys(t, mode)
			if err := checkKeysFile(path); err != nil {
				t.Fatalf("checkKeysFile(%04o) = %v, want nil", mode, err)
			}
		})
	}
	for _, c := range []struct {
		mode os.FileMode
		what string
	}{{0o640, "readable"}, {0o644, "readable"}, {0o604, "readable"}, {0o660, "readable"}, {0o620, "accessible"}, {0o602, "accessible"}, {0o601, "accessible"}} {
		t.Run(fmt.Sprintf("refuses %04o", c.mode), func(t *testing.T) {
			path := writeKeys(t, c.mode)
			err := checkKeysFile(path)
			want := fmt.Sprintf("keys file %s is %s by others (mode %04o); run chmod 600 %s", path, c.what, c.mode, path)
			if err == nil || err.Error() != want {
				t.Fatalf("checkKeysFile(%04o) = %v, want %q", c.mode, err, want)
			}
			var pe *PermError
			if !errors.As(err, &pe) || pe.Code != KeysFileExposed {
				t.Fatalf("error %#v, want *PermError with code %s", err, KeysFileExposed)
			}
		})
	}
	t.Run("symlink refused whatever its target", func(t *testing.T) {
		for _, mode := range []os.FileMode{0o600, 0o644} {
			target := writeKeys(t, mode)
			link := filepath.Join(t.TempDir(), "keys.yaml")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			err := checkKeysFile(link)
			var pe *PermError
			if !errors.As(err, &pe) || pe.Code != KeysFileInvalid || !strings.Contains(err.Error(), "is a symlink (to "+target+")") {
				t.Fatalf("checkKeysFile(symlink to %04o) = %v, want keys_file_invalid naming the target", mode, err)
			}
		}
	})
	t.Run("dangling symlink refused", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "keys.yaml")
		if err := os.Symlink("/nonexistent/keys.yaml", link); err != nil {
			t.Fatal(err)
		}
		if err := checkKeysFile(link); err == nil {
			t.Fatal("checkKeysFile(dangling symlink) = nil, want an error")
		}
	})
	t.Run("another user's file refused", func(t *testing.T) {
		path := writeKeys(t, 0o600)
		chownOther(t, path)
		err := checkKeysFile(path)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(uid %d), not by the current user", otherUID)) || !strings.Contains(err.Error(), "sudo chown") {
			t.Fatalf("checkKeysFile(other owner) = %v, want the owner refusal", err)
		}
	})
	t.Run("directory refused", func(t *testing.T) {
		if err := checkKeysFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
			t.Fatalf("checkKeysFile(dir) = %v, want not a regular file", err)
		}
	})
	t.Run("path needing quotes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "my keys.yaml")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkKeysFile(path); err == nil || !strings.HasSuffix(err.Error(), "run chmod 600 '"+path+"'") {
			t.Fatalf("CheckKeysFile = %v, want a quoted path in the command", err)
		}
	})
}

func writeKeys(t *testing.T, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(path, []byte("anthropic: sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReasonCodesRegistered(t *testing.T) {
	for _, c := range []reasons.Code{ConfigInvalid, KeysFileExposed, KeysFileInvalid, PrivateDirUnsafe} {
		if e, ok := reasons.Lookup(c); !ok || e.Kind != reasons.KindConfig || e.Text == "" {
			t.Errorf("reasons.Lookup(%s) = %+v, %v, want a config entry", c, e, ok)
		}
	}
	_, err := Parse("c.yaml", []byte("x: 1\n"))
	var e *Error
	if !errors.As(err, &e) || e.Reason() != ConfigInvalid {
		t.Errorf("Parse error reason = %v, want %s", err, ConfigInvalid)
	}
}

// checkKeysFile applies OpenKeysFile's rule and reads nothing.
func checkKeysFile(path string) error {
	f, err := OpenKeysFile(path)
	if f != nil {
		f.Close()
	}
	return err
}
