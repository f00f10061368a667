//go:build unix

package config

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// setHelperEnv makes this test binary an `anet config set`: the concurrent test below starts
// it once per key, as separate processes, as operators do.
const setHelperEnv = "ANET_CONFIG_SET_HELPER"

// TestConfigSetHelperProcess is the child of TestConcurrentSetsAllLandC4; alone it does nothing.
func TestConfigSetHelperProcess(t *testing.T) {
	args := os.Getenv(setHelperEnv)
	if args == "" {
		return
	}
	var path, key, value string
	if _, err := fmt.Sscanf(args, "%s %s %s", &path, &key, &value); err != nil {
		t.Fatal(err)
	}
	if err := Set(path, key, value); err != nil {
		t.Fatalf("Set(%s, %s) = %v", key, value, err)
	}
}

// TestConcurrentSetsAllLandC4: `anet config set` of different keys started at the same time,
// each its own process on the real file, all land: none reads the old file while another
// replaces it and writes back without the other's change (the lost update an operator saw).
func TestConcurrentSetsAllLandC4(t *testing.T) {
	keys := []string{"auto_reply.sandbox.runs_per_day", "auto_reply.sandbox.runs_per_peer_per_day",
		"auto_reply.sandbox.tasks_max", "auto_reply.api_timeout_seconds", "auto_reply.model",
		"log_level", "auto_reply.trusted", "auto_reply.sandbox.spend_per_day"}
	values := []string{"7", "3", "99", "77", "model-x", "debug", "off", "2.50"}
	for round := range 4 {
		path := writeFile(t, operatorFile, 0o600)
		var wg sync.WaitGroup
		errs := make([]error, len(keys))
		for i := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^TestConfigSetHelperProcess$", "-test.count=1")
				cmd.Env = append(os.Environ(), setHelperEnv+"="+path+" "+keys[i]+" "+values[i])
				if out, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("%v: %s", err, out)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			if got, _ := Get(c, k); got != values[i] {
				t.Errorf("round %d: after %d concurrent sets, Get(%s) = %q, want %q (an update was lost)", round, len(keys), k, got, values[i])
			}
		}
		assertNoTempFiles(t, filepath.Dir(path))
	}
}

// TestSetHoldsTheLockWhileEditingC4: between the read and the write the set holds the
// exclusive lock beside the file, so any other set waits for it.
func TestSetHoldsTheLockWhileEditingC4(t *testing.T) {
	path := writeFile(t, operatorFile, 0o600)
	var tried bool
	afterRead = func(target string) {
		tried = true
		f, err := os.OpenFile(lockPath(target), os.O_RDWR, 0)
		if err != nil {
			t.Errorf("lock file beside %s: %v", target, err)
			return
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("flock of %s while a set edits = %v, want EWOULDBLOCK (the set holds no lock)", lockPath(target), err)
		}
	}
	t.Cleanup(func() { afterRead = nil })
	if err := Set(path, "auto_reply.sandbox.tasks_max", "99"); err != nil {
		t.Fatal(err)
	}
	if !tried {
		t.Fatal("the afterRead hook never ran")
	}
}

// TestSetRedoesTheEditWhenTheFileChangedC4: a writer that does not take the lock (an editor)
// changes the file after the set read it; the set does not write its edit of the old bytes
// over it, but edits the new bytes, so both changes are in the file.
func TestSetRedoesTheEditWhenTheFileChangedC4(t *testing.T) {
	path := writeFile(t, operatorFile, 0o600)
	reads := 0
	afterRead = func(target string) {
		reads++
		if reads == 1 {
			if err := os.WriteFile(target, []byte(operatorFile+"log_level: debug\n"), 0o600); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { afterRead = nil })
	if err := Set(path, "auto_reply.sandbox.tasks_max", "99"); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.LogLevel != "debug" || c.AutoReply.Sandbox.TasksMax != 99 {
		t.Fatalf("after a set raced by an editor: log_level = %q, tasks_max = %d, want debug, 99 (one change lost)", c.LogLevel, c.AutoReply.Sandbox.TasksMax)
	}
	if reads != 2 {
		t.Fatalf("the set read the file %d times, want 2 (once, then again after the change)", reads)
	}
}

// TestSetNeverReportsALostWriteC4: a file that keeps changing under the set is refused with
// errChanged after a bounded number of tries, and the other writer's content stays.
func TestSetNeverReportsALostWriteC4(t *testing.T) {
	path := writeFile(t, operatorFile, 0o600)
	n := 0
	afterRead = func(target string) {
		n++
		if err := os.WriteFile(target, []byte(operatorFile+"# edit "+strconv.Itoa(n)+"\n"), 0o600); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterRead = nil })
	err := Set(path, "auto_reply.sandbox.tasks_max", "99")
	if !errors.Is(err, errChanged) {
		t.Fatalf("Set on a file that keeps changing = %v, want errChanged", err)
	}
	if got, want := readFile(t, path), operatorFile+"# edit "+strconv.Itoa(n)+"\n"; got != want {
		t.Fatalf("file after a refused set = %q, want the other writer's %q", got, want)
	}
	assertNoTempFiles(t, filepath.Dir(path))
}

// TestSetKeepsOwnerAndGroupC4: the replacement file has the old one's owner and group, not
// those of the process that wrote it. The file is given a group other than the writer's own
// where the writer may (root, or a member of another group), so that keeping it shows.
func TestSetKeepsOwnerAndGroupC4(t *testing.T) {
	path := writeFile(t, operatorFile, 0o640)
	gid := os.Getegid()
	if os.Geteuid() == 0 {
		gid = 4242
	} else if gs, _ := os.Getgroups(); len(gs) > 0 {
		for _, g := range gs {
			if g != gid {
				gid = g
				break
			}
		}
	}
	if err := os.Chown(path, os.Geteuid(), gid); err != nil {
		t.Fatal(err)
	}
	if err := Set(path, "log_level", "debug"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Geteuid() || int(st.Gid) != gid || fi.Mode().Perm() != 0o640 {
		t.Fatalf("after Set: owner %d:%d mode %04o, want %d:%d 0640", st.Uid, st.Gid, fi.Mode().Perm(), os.Geteuid(), gid)
	}
}
