//go:build unix

package agents

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadAnswerFile: the work dir belongs to the agent, so the answer file may be a link to
// an operator file, a FIFO that would block the reader, a directory or huge. Only a regular
// file inside the work dir is read (F3: nothing of the host reaches the requester this way).
func TestReadAnswerFile(t *testing.T) {
	src := AnswerSource{Kind: AnswerFile, File: answerFileName}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "keys")
	if err := os.WriteFile(secret, []byte("sk-operator-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T, work string)
		want    string // content read; "" with wantErr "" means absent
		wantErr string
	}{
		{"regular", func(t *testing.T, w string) { write(t, filepath.Join(w, answerFileName), "ANSWER") }, "ANSWER", ""},
		{"absent", func(t *testing.T, w string) {}, "", ""},
		{"symlink to host secret", func(t *testing.T, w string) { symlink(t, secret, filepath.Join(w, answerFileName)) }, "", "not a regular file"},
		{"symlink inside work", func(t *testing.T, w string) {
			write(t, filepath.Join(w, "other"), "x")
			symlink(t, "other", filepath.Join(w, answerFileName))
		}, "", "not a regular file"},
		{"fifo", func(t *testing.T, w string) {
			if err := syscall.Mkfifo(filepath.Join(w, answerFileName), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", "not a regular file"},
		{"directory", func(t *testing.T, w string) {
			if err := os.Mkdir(filepath.Join(w, answerFileName), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "", "not a regular file"},
		{"over the read cap", func(t *testing.T, w string) {
			f, err := os.Create(filepath.Join(w, answerFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(MaxOutputBytes + 1); err != nil {
				t.Fatal(err)
			}
		}, "", "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			c.setup(t, work)
			files, err := ReadAnswerFile(work, src)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ReadAnswerFile = %v, %v; want an error containing %q", files, err, c.wantErr)
				}
				if strings.Contains(err.Error(), "sk-operator-secret") {
					t.Fatalf("ReadAnswerFile error leaks the target's content: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadAnswerFile = %v, want nil", err)
			}
			got, ok := files[answerFileName]
			if c.want == "" {
				if ok {
					t.Fatalf("ReadAnswerFile = %q, want no file", got)
				}
				return
			}
			if string(got) != c.want {
				t.Fatalf("ReadAnswerFile = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("name with a path", func(t *testing.T) {
		for _, name := range []string{"../keys", "a/b", "", "..", "."} {
			if _, err := ReadAnswerFile(t.TempDir(), AnswerSource{Kind: AnswerFile, File: name}); err == nil {
				t.Errorf("ReadAnswerFile(file %q) = nil error, want a refusal", name)
			}
		}
	})
	t.Run("not a file answer", func(t *testing.T) {
		files, err := ReadAnswerFile("/nonexistent", AnswerSource{Kind: AnswerText})
		if err != nil || len(files) != 0 {
			t.Fatalf("ReadAnswerFile(stdout kind) = %v, %v; want empty, nil", files, err)
		}
	})
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
