//go:build unix

package linksafe

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// RunDirs is what MakeRunDirs made for one run.
type RunDirs struct {
	// Dir is <run root>/<id>; Lock holds it for the run's life (close to release).
	Dir  string
	Lock *os.File
	// Made are home, tmp and, when asked for, work, in that order.
	Made []string
	// Swept are the run dirs of a killed launcher removed on the way, and why sweeping failed.
	Swept    []string
	SweepErr error
}

// MakeRunDirs creates a run's private dirs fresh under runRoot, never following a link:
// <runRoot>/<id> (0700, locked, so the next launch's sweep leaves it alone) and its home, tmp
// and, with withWork, work dir. A dir of that id left over from an earlier run is refused, not
// reused: it may hold what that run planted. Every backend that keeps a run's dirs on the host
// makes them here. On an error the returned RunDirs holds what was made, for the caller's
// cleanup.
func MakeRunDirs(runRoot, id string, withWork bool) (RunDirs, error) {
	var d RunDirs
	root, rootF, err := MkdirUnder(runRoot, "", 0o700)
	if err != nil {
		return d, fmt.Errorf("run root: %w", err)
	}
	defer rootF.Close()
	d.Swept, d.SweepErr = SweepRunRoot(root, time.Minute)
	if err := unix.Mkdirat(int(rootF.Fd()), id, 0o700); err != nil {
		return d, fmt.Errorf("run dir %s: %w", filepath.Join(root, id), err)
	}
	d.Dir = filepath.Join(root, id)
	if d.Lock, err = LockRunDir(d.Dir); err != nil {
		return d, err
	}
	// The run dir was made just now, by us, and is held open: its children are made
	// relative to it, so no component is looked up again.
	sub := []string{"home", "tmp"}
	if withWork {
		sub = append(sub, "work")
	}
	for _, s := range sub {
		p := filepath.Join(d.Dir, s)
		if err := unix.Mkdirat(int(d.Lock.Fd()), s, 0o700); err != nil {
			return d, fmt.Errorf("mkdir %s: %w", p, err)
		}
		d.Made = append(d.Made, p)
	}
	return d, nil
}
