package config

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// openKeysChildEnv makes the test binary open the keys file it names and print the error:
// the child run as another uid, which root cannot be (root reads any file).
const openKeysChildEnv = "ANET_CONFIG_TEST_OPEN_KEYS"

func TestMain(m *testing.M) {
	if path := os.Getenv(openKeysChildEnv); path != "" {
		f, err := OpenKeysFile(path)
		var pe *PermError
		switch {
		case errors.As(err, &pe):
			fmt.Printf("%s: %s", pe.Code, err)
		case err != nil:
			fmt.Printf("error: %s", err)
		default:
			f.Close()
			fmt.Print("opened")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// F3: a keys file that another user owns and this user cannot even open (copied in with
// sudo, mode 0600) is refused with its owner and the chown that repairs it, as a file that
// could be opened is, not with a bare "permission denied".
func TestKeysFileOfAnotherUserThatCannotBeOpenedNamesTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs a reader as uid %d and needs root (CI runs as root)", otherUID)
	}
	dir := t.TempDir()
	// The reader must reach the directory, as the operator reaches their own config dir.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o777)
	path := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(path, []byte("anthropic: sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary may sit in a root-only build dir: run a copy the reader can execute.
	bin := filepath.Join(dir, "config.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{openKeysChildEnv + "=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID, Groups: []uint32{}}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reader as uid %d: %v", otherUID, err)
	}
	got := string(out)
	for _, want := range []string{string(KeysFileExposed) + ": keys file " + path, "is owned by root (uid 0)", fmt.Sprintf("sudo chown %d %s", otherUID, path)} {
		if !strings.Contains(got, want) {
			t.Errorf("OpenKeysFile(root's 0600 file) as uid %d = %q, want it to say %q", otherUID, got, want)
		}
	}
	if strings.Contains(got, "sk-test") {
		t.Fatalf("OpenKeysFile's error quotes the key: %q", got)
	}
}
