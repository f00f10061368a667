package launch

import (
	"fmt"
	"log/slog"
	"os"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/sandbox"
)

// RunDirs are a run's host dirs (S3), made alike by every backend that keeps them on the
// host: <RunRoot>/<ID>/{home,tmp[,work]} fresh and link-safe, locked while the run lives
// (linksafe.SweepRunRoot), and the work dir, which is <WorkRoot>/<WorkSub> when the spec
// names a work root.
type RunDirs struct {
	Home, Tmp, Work string
	// All are home, tmp and work: what the disk limit measures.
	All []string

	dir  string   // <RunRoot>/<ID>
	lock *os.File // flock on dir while the run lives
}

// MakeRunDirs makes spec's run dirs and writes its home files. On an error the returned
// RunDirs holds what was made: the caller removes it (Remove) as after a run.
func MakeRunDirs(spec sandbox.Spec, log *slog.Logger) (*RunDirs, error) {
	d, err := linksafe.MakeRunDirs(spec.RunRoot, spec.ID, spec.WorkRoot == "")
	rd := &RunDirs{dir: d.Dir, lock: d.Lock, All: d.Made}
	if len(d.Swept) > 0 || d.SweepErr != nil {
		log.Warn("swept run dirs of a killed launcher", "removed", d.Swept, "err", d.SweepErr)
	}
	if err != nil {
		return rd, err
	}
	rd.Home, rd.Tmp = d.Made[0], d.Made[1]
	files := make([]linksafe.File, 0, len(spec.HomeFiles))
	for _, f := range spec.HomeFiles {
		files = append(files, linksafe.File{Path: f.Path, Mode: f.Mode, Content: f.Content})
	}
	if err := linksafe.WriteHomeFiles(rd.Home, files); err != nil {
		return rd, err
	}
	if spec.WorkRoot == "" {
		rd.Work = d.Made[2]
		return rd, nil
	}
	p, f, err := linksafe.MkdirUnder(spec.WorkRoot, spec.WorkSub, 0o700)
	if err != nil {
		return rd, fmt.Errorf("work dir: %w", err)
	}
	f.Close()
	rd.Work = p
	rd.All = append(rd.All, p)
	return rd, nil
}

// Remove deletes <RunRoot>/<ID> and releases its lock; a work dir under WorkRoot stays (it is
// the caller's). A nil RunDirs is nothing to remove.
func (d *RunDirs) Remove(log *slog.Logger, id string) {
	if d == nil {
		return
	}
	if d.dir != "" {
		if err := linksafe.RemovePath(d.dir); err != nil {
			log.Warn("run cleanup", "id", id, "err", err)
		}
	}
	if d.lock != nil {
		d.lock.Close()
	}
}
