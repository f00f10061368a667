package agents

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Runtime is what an agent's program needs to run besides itself: the interpreter named in
// its "#!" line and the versions of it that work. The node resolves that interpreter on the
// host, checks its version before a run and binds its tree into the sandbox (E10).
type Runtime struct {
	// Program is the interpreter's name ("node", "python3"); "" for a native binary.
	Program string
	// Ranges are the versions that work; empty: any (none is checked).
	Ranges []VersionRange
	// Text says the requirement in words, for doctor and refusals.
	Text string
}

// VersionRange is Min ≤ v < Below; a zero Below has no upper bound.
type VersionRange struct{ Min, Below Version }

// Version is major.minor.patch.
type Version [3]int

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

func (v Version) less(w Version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] < w[i]
		}
	}
	return false
}

// Accepts reports whether v is in one of r's ranges (always, when r has none).
func (r Runtime) Accepts(v Version) bool {
	if len(r.Ranges) == 0 {
		return true
	}
	for _, rg := range r.Ranges {
		if !v.less(rg.Min) && (rg.Below == Version{} || v.less(rg.Below)) {
			return true
		}
	}
	return false
}

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`)

// ParseVersion reads the first dotted version in an interpreter's --version output
// ("v24.21.0", "Python 3.11.2").
func ParseVersion(out string) (Version, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return Version{}, fmt.Errorf("version: no major.minor[.patch] in %q", strings.TrimSpace(truncate(out, 80)))
	}
	var v Version
	for i := 0; i < 3; i++ {
		if m[i+1] == "" {
			continue
		}
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %w", m[0], err)
		}
		v[i] = n
	}
	return v, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
