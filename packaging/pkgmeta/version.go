package main

import (
	"fmt"
	"regexp"
	"strconv"
)

// Tree is what git says about the tree being packaged.
type Tree struct {
	// Describe is `git describe --tags --long --match 'v[0-9]*' --abbrev=12`, without
	// --dirty; "" when no release tag is reachable.
	Describe string
	// Commits is `git rev-list --count HEAD`: what orders untagged trees.
	Commits int
	// Hash is the abbreviated commit (12 hex digits), used when Describe is "".
	Hash string
	// Dirty reports uncommitted changes to tracked files.
	Dirty bool
}

// describeRE is a long describe of a release tag: vX.Y.Z, an optional pre-release
// (v1.2.0-rc.1), the commits since the tag and the commit.
var describeRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([A-Za-z][0-9A-Za-z.]*))?-([0-9]+)-g([0-9a-f]{7,40})$`)

var hashRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// validRE is what both dpkg (as the upstream part, the Debian revision is added apart) and
// rpm (a Version tag has no '-') accept, starting with a digit as both require.
var validRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

// Version maps a tree to a package version that dpkg and rpm order the way releases are
// made (C4):
//
//	tag v1.2.3                 1.2.3
//	4 commits after v1.2.3     1.2.3+git4.<hash>   after 1.2.3, before 1.2.4
//	tag v1.3.0-rc.1            1.3.0~rc.1          before 1.3.0
//	no tag, 36 commits         0.0.0~git36.<hash>  before any release
//
// A dirty tree adds ".dirty" after the hash, so it never takes a clean build's version.
// In both tools '~' sorts before anything, even the end of the string, and '+' after it.
func Version(t Tree) (string, error) {
	var v string
	switch {
	case t.Describe != "":
		m := describeRE.FindStringSubmatch(t.Describe)
		if m == nil {
			return "", fmt.Errorf("package version: git describe %q is not vX.Y.Z[-pre]-N-gHASH (release tags are vX.Y.Z or vX.Y.Z-rc.N)", t.Describe)
		}
		n, err := strconv.Atoi(m[5])
		if err != nil {
			return "", fmt.Errorf("package version: commits since tag in %q: %w", t.Describe, err)
		}
		v = m[1] + "." + m[2] + "." + m[3]
		if m[4] != "" {
			v += "~" + m[4]
		}
		if n > 0 || t.Dirty {
			v += fmt.Sprintf("+git%d.%s", n, m[6])
		}
	case hashRE.MatchString(t.Hash) && t.Commits > 0:
		v = fmt.Sprintf("0.0.0~git%d.%s", t.Commits, t.Hash)
	default:
		return "", fmt.Errorf("package version: no release tag, and commit %q / count %d are not a commit hash and a positive count", t.Hash, t.Commits)
	}
	if t.Dirty {
		v += ".dirty"
	}
	if !validRE.MatchString(v) {
		return "", fmt.Errorf("package version: %q is not a valid dpkg and rpm version", v)
	}
	return v, nil
}
