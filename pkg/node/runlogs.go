package node

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"sort"
	"strings"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/linksafe"
)

// maxRunLogRead bounds what `anet show` reads of one run's log (the log keeps at most 64 KiB
// of the agent's standard error and a few lines about the run).
const maxRunLogRead = 80 << 10

// readRunLogs returns the logs of the runs that answered interaction id of peer, oldest
// first, read through os.Root so that no link in the tree leads the read out of root.
func readRunLogs(root, peer, id string, log *slog.Logger) []control.RunLog {
	sub := path.Join(peer, id)
	if linksafe.ValidateRelPath(sub) != nil {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	d, err := r.Open(sub)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("run logs", "err", err)
		}
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	sort.Strings(names) // run ids start with their UTC start time
	var out []control.RunLog
	for _, name := range names {
		run, ok := strings.CutSuffix(name, ".log")
		if !ok {
			continue
		}
		f, err := r.Open(path.Join(sub, name))
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(f, maxRunLogRead))
		f.Close()
		out = append(out, control.RunLog{Run: run, Text: string(b)})
	}
	return out
}
