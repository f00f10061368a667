//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDirectRun: direct mode (P4) runs unsandboxed in <work root>/<aid>/<interaction> with
// the same wall clock as a sandboxed run (S6).
func TestDirectRun(t *testing.T) {
	root := t.TempDir()
	// The launcher's own environment (a key, a proxy) never reaches the agent (S5, F3); the
	// operator's home stays its home (P4).
	t.Setenv("ANET_TEST_SECRET", "sk-launcher-secret")
	home, _ := os.UserHomeDir()
	spec := Spec{ID: "d1", Mode: ModeDirect,
		Argv:    []string{"/bin/sh", "-c", `pwd; echo $ANET_X; echo "$HOME"; echo "${ANET_TEST_SECRET-unset}"; exit 3`},
		RunRoot: t.TempDir(), WorkRoot: root, WorkSub: "aid/i1", Env: []string{"ANET_X=hello"}}
	var out bytes.Buffer
	run, err := StartDirect(context.Background(), spec, Stdio{Stdout: &out})
	if err != nil {
		t.Fatalf("StartDirect = %v", err)
	}
	o := run.Wait()
	work := filepath.Join(root, "aid", "i1")
	if real, err := filepath.EvalSymlinks(root); err == nil {
		work = filepath.Join(real, "aid", "i1")
	}
	want := work + "\nhello\n" + home + "\nunset\n"
	if o.ExitCode != 3 || out.String() != want || o.Limit != "" {
		t.Fatalf("direct run = exit %d limit %q output %q, want 3, none, %q", o.ExitCode, o.Limit, out.String(), want)
	}
}

func TestDirectWallClock(t *testing.T) {
	spec := Spec{ID: "d2", Mode: ModeDirect, Argv: []string{"/bin/sh", "-c", "trap '' TERM; sleep 600 & wait; sleep 600"},
		RunRoot: t.TempDir(), WorkRoot: t.TempDir(), WorkSub: "a/b",
		Limits: Limits{WallClock: time.Second, Grace: 500 * time.Millisecond}}
	run, err := StartDirect(context.Background(), spec, Stdio{})
	if err != nil {
		t.Fatalf("StartDirect = %v", err)
	}
	o := run.Wait()
	if o.Limit != LimitWallClock || o.Signal != 9 {
		t.Fatalf("direct run past its wall clock = limit %q signal %d, want wall_clock and SIGKILL after grace", o.Limit, o.Signal)
	}
}

func TestDirectRefusesLinkedWorkDir(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "aid")); err != nil {
		t.Fatal(err)
	}
	spec := Spec{ID: "d3", Mode: ModeDirect, Argv: []string{"/bin/true"}, RunRoot: t.TempDir(), WorkRoot: root, WorkSub: "aid/i1"}
	_, err := StartDirect(context.Background(), spec, Stdio{})
	if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), "aid") {
		t.Fatalf("StartDirect with a linked aid dir = %v, want ErrSymlink", err)
	}
}
