package boundaries

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideRefs are ways of pointing at something a clone of the repository does not have: an
// issue tracker's numbers, the planning documents the project was built from, the spec's
// seeds. Code and documents cite requirement ids and docs/ instead.
var outsideRefs = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bissues?\s*#?\d|\bissue\d`), "an issue number"},
	{regexp.MustCompile(`\b(ARCHITECTURE|REFERENCE|DEVELOPERS)\b|\b(REQUIREMENTS|STYLE|BRIEF)\.md\b`), "a document outside the repository"},
	{regexp.MustCompile(`\.\./shared\b|/work/shared\b`), "a path outside the repository"},
	{regexp.MustCompile(`(?i)\bthe brief\b|\bseeds? \d+'s\b|\bthe seeds?\b`), "a document outside the repository"},
}

// Code, tests, the README, docs/, man pages, packaging and scripts cite requirement ids and
// docs/ files, never issue numbers or documents outside the repository: whoever clones the
// project can follow every reference.
func TestNoReferenceOutsideTheRepository(t *testing.T) {
	self := filepath.ToSlash(filepath.Join("internal", "boundaries", "references_test.go"))
	files := 0
	check := func(rel string) error {
		if rel == self {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		files++
		for i, line := range strings.Split(string(b), "\n") {
			for _, o := range outsideRefs {
				if m := o.re.FindString(line); m != "" {
					t.Errorf("%s:%d refers to %s (%q); cite a requirement id or a docs/ file", rel, i+1, o.why, m)
				}
			}
		}
		return nil
	}
	walkRepo(t, check)
	// walkRepo skips hidden directories; CI's scripts are in one.
	ci, err := os.ReadDir(filepath.Join(root, ".ci"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ci {
		if e.Type().IsRegular() {
			if err := check(".ci/" + e.Name()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if files < 300 {
		t.Fatalf("read %d files: the scan is broken", files)
	}
}
