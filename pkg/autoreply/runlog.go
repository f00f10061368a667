package autoreply

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"time"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/peer"
)

// maxRunLogStderr bounds the agent's standard error kept in a run's log.
const maxRunLogStderr = 64 << 10

// RunLogName is a run's log file in <RunLogs>/<peer>/<interaction>/.
func RunLogName(run string) string { return run + ".log" }

// keepRunLog writes the run's own log beside the others of its interaction: what ran, how
// it ended, what the model service answered, and the agent's standard error (clipped, with
// the run's token masked). It is how `anet show` and `anet autoreply test` can say why a run
// gave no answer without the daemon's log. It returns the file's path, or "" when there is
// nothing to keep (nothing ran) or no place for it.
func (e *Engine) keepRunLog(log *slog.Logger, t peer.Task, run string, set *Settings, route Route, out outcome) string {
	root := e.o.Dirs.RunLogs
	if root == "" || !out.ran {
		return ""
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "run %s of interaction %s from %s, ended %s\n", run, t.Interaction, t.Peer, e.o.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "route %s, backend %s, agent %s\n", route, set.Config.Backend, set.Config.Agent)
	for _, k := range []string{"exit_code", "limit", "cgroup", "mode", "backend", "model", "status"} {
		if v, ok := out.details[k]; ok && fmt.Sprint(v) != "" {
			fmt.Fprintf(&b, "%s: %v\n", k, v)
		}
	}
	if m, ok := parseModelUsage(out.usage); ok {
		fmt.Fprintf(&b, "model calls: %s\n", m.summary())
		if f := m.failure(); f != "" {
			fmt.Fprintf(&b, "model call failure: %s\n", f)
		}
	}
	if out.answer == "" && out.code != "" {
		fmt.Fprintf(&b, "no answer: %s: %s\n", out.code, out.detail)
	}
	fmt.Fprintf(&b, "--- agent standard error (at most %d KiB, run token masked) ---\n", maxRunLogStderr>>10)
	b.Write(out.stderr)
	sub := path.Join(t.Peer, t.Interaction)
	if err := linksafe.ValidateRelPath(sub); err != nil {
		log.Warn("run log not kept", "err", err)
		return ""
	}
	if err := writeRunLog(root, sub, RunLogName(run), b.Bytes()); err != nil {
		log.Warn("run log not kept", "err", err)
		return ""
	}
	return filepath.Join(root, sub, RunLogName(run))
}

// writeRunLog writes name under root/sub through os.Root, so no link in the tree leads the
// write out of root.
func writeRunLog(root, sub, name string, data []byte) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("run logs: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("run logs: %w", err)
	}
	defer r.Close()
	if err := r.MkdirAll(sub, 0o700); err != nil {
		return fmt.Errorf("run log dir %s: %w", sub, err)
	}
	f, err := r.OpenFile(path.Join(sub, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("run log %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("run log %s: %w", name, err)
	}
	return f.Close()
}
