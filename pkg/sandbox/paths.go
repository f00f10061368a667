package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"
)

// HostRunDirs are the host paths of a run's home, tmp and work dir, as a backend with host
// paths (RunShape.HostPaths) creates them and as the agent is told them: <RunRoot>/<ID>/home
// and …/tmp, and <WorkRoot>/<WorkSub>, or <RunRoot>/<ID>/work for a run with no work root.
// The spec must be valid.
func HostRunDirs(s Spec) (home, tmp, work string) {
	run := filepath.Join(s.RunRoot, s.ID)
	work = filepath.Join(run, "work")
	if s.WorkRoot != "" {
		work = filepath.Join(s.WorkRoot, s.WorkSub)
	}
	return filepath.Join(run, "home"), filepath.Join(run, "tmp"), work
}

// CheckAgentTree refuses an agent installation tree that would expose what must stay hidden
// (S3, F3): one that lies under, or contains, a hidden dir (data, runtime, config, control
// token), one that is the operator's home or contains it (home may be ""), or "/" or a
// top-level dir. Every backend that opens the tree to a run checks it with this.
func CheckAgentTree(tree string, hidden []string, home string) error {
	if !filepath.IsAbs(tree) || filepath.Clean(tree) != tree {
		return fmt.Errorf("agent tree %q: want a clean absolute path", tree)
	}
	if strings.Count(tree, "/") < 2 {
		return fmt.Errorf("agent tree %q: too broad (a top-level directory)", tree)
	}
	if home != "" && Within(home, tree) {
		return fmt.Errorf("agent tree %q: contains the operator's home %q", tree, home)
	}
	for _, h := range hidden {
		if Within(tree, h) || Within(h, tree) {
			return fmt.Errorf("agent tree %q: overlaps %q, which must never be visible in a run", tree, h)
		}
	}
	return nil
}

// Within reports whether path p is dir or below it (both clean and absolute).
func Within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
