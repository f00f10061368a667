package boundaries

import (
	"flag"
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated Tests column of docs/architecture.md's enforcement table")

// idLetters are the first letters of requirement ids (docs/requirements.md).
const idLetters = "PLMOASEHRBFCVNKUQ"

// citedID finds a requirement id standing as a word in text ("R1", "E10").
var citedID = regexp.MustCompile(`\b[` + idLetters + `]\d{1,2}\b`)

// definedIDs returns the ids docs/requirements.md defines ("- **R1** …"), in order.
func definedIDs(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "requirements.md"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`(?m)^- \*\*([A-Z]\d{1,2})\*\* `).FindAllStringSubmatch(string(doc), -1) {
		ids = append(ids, m[1])
	}
	if len(ids) < 60 {
		t.Fatalf("docs/requirements.md defines %d ids: the parse is broken", len(ids))
	}
	return ids
}

// Whoever clones the repository can look up every requirement id the code cites: each one is
// defined in docs/requirements.md.
func TestEveryCitedRequirementIsDefined(t *testing.T) {
	defined := map[string]bool{}
	for _, id := range definedIDs(t) {
		defined[id] = true
	}
	cited := 0
	walkRepo(t, func(rel string) error {
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, id := range citedID.FindAllString(line, -1) {
				cited++
				if !defined[id] {
					t.Errorf("%s:%d cites %s, which docs/requirements.md does not define", rel, i+1, id)
				}
			}
		}
		return nil
	})
	if cited < 500 {
		t.Fatalf("found %d citations in Go files: the scan is broken", cited)
	}
}

// testIDs returns the ids a test function cites: in its name after "Test" (TestOutputCapE3,
// TestModelRequestThroughSocketE1F3) or as words in its doc comment.
func testIDs(fd *ast.FuncDecl) []string {
	name := strings.TrimPrefix(fd.Name.Name, "Test")
	var ids []string
	for i := 0; i < len(name); i++ {
		// An id in a name starts after a lower-case letter or digit ("SHA256" and "HTTP2"
		// hold no id) and its digits are not followed by another digit.
		if !strings.ContainsRune(idLetters, rune(name[i])) || (i > 0 && name[i-1] >= 'A' && name[i-1] <= 'Z') {
			continue
		}
		j := i + 1
		for j < len(name) && j < i+3 && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		if j > i+1 && (j == len(name) || name[j] < '0' || name[j] > '9') {
			ids = append(ids, name[i:j])
		}
	}
	if fd.Doc != nil {
		ids = append(ids, citedID.FindAllString(fd.Doc.Text(), -1)...)
	}
	return ids
}

// generatedTests returns, per requirement id, the cell listing the tests that cite it:
// "`pkg/x` TestA, TestB; `integration` TestC", packages and tests sorted.
func generatedTests(t *testing.T) map[string]string {
	t.Helper()
	byID := map[string]map[string]map[string]bool{} // id → package dir → test
	fset := token.NewFileSet()
	forEachGoFile(t, fset, true, func(f *ast.File) {
		file := fset.Position(f.Package).Filename
		if !strings.HasSuffix(file, "_test.go") {
			return
		}
		rel, _ := filepath.Rel(root, filepath.Dir(file))
		dir := filepath.ToSlash(rel)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			for _, id := range testIDs(fd) {
				if byID[id] == nil {
					byID[id] = map[string]map[string]bool{}
				}
				if byID[id][dir] == nil {
					byID[id][dir] = map[string]bool{}
				}
				byID[id][dir][fd.Name.Name] = true
			}
		}
	})
	cells := map[string]string{}
	for id, dirs := range byID {
		var parts []string
		for _, dir := range sortedKeys(dirs) {
			parts = append(parts, "`"+dir+"` "+strings.Join(sortedKeys(dirs[dir]), ", "))
		}
		cells[id] = strings.Join(parts, "; ")
	}
	return cells
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// enforcedIn finds the paths a row's "Enforced in" cell names: `pkg/x` and `pkg/x` (a.go, b.go).
var (
	enforcedIn = regexp.MustCompile("`([^`]+)`(?: \\(([^)]*)\\))?")
	goFileName = regexp.MustCompile(`[a-z0-9_]+\.go\b`)
)

// docs/architecture.md has one row per requirement, in the order of requirements.md; the
// places it names exist; and its Tests column is what the code says (regenerate with -update).
func TestEnforcementTable(t *testing.T) {
	file := filepath.Join(root, "docs", "architecture.md")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const begin, end = "<!-- enforcement:begin -->\n", "<!-- enforcement:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/architecture.md has no %q … %q block", strings.TrimSpace(begin), end)
	}
	lines := strings.Split(strings.TrimSuffix(doc[i+len(begin):j], "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "| Id | Rule | Enforced in | Tests |") {
		t.Fatalf("enforcement table header = %q, want | Id | Rule | Enforced in | Tests |", lines[0])
	}
	gen := generatedTests(t)
	var rowIDs []string
	stale := 0
	for n, line := range lines[2:] {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || strings.TrimSpace(cells[0]) != "" || strings.TrimSpace(cells[5]) != "" {
			t.Fatalf("enforcement table row %d does not have 4 cells: %s", n+1, line)
		}
		cells = cells[1:5]
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		id := cells[0]
		rowIDs = append(rowIDs, id)
		for _, m := range enforcedIn.FindAllStringSubmatch(cells[2], -1) {
			p := m[1]
			if !strings.Contains(p, "/") && !strings.Contains(p, ".") && p != "packaging" && p != "Makefile" {
				continue // a word in code font, not a path
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("enforcement table %s names %s, which does not exist", id, p)
				continue
			}
			for _, f := range goFileName.FindAllString(m[2], -1) {
				if _, err := os.Stat(filepath.Join(root, p, f)); err != nil {
					t.Errorf("enforcement table %s names %s, which does not exist", id, path.Join(p, f))
				}
			}
		}
		want := gen[id]
		if cells[3] != want {
			stale++
			if !*update {
				t.Errorf("enforcement table %s: Tests = %q, the code says %q", id, cells[3], want)
			}
			cells[3] = want
		}
		lines[2+n] = "| " + strings.Join(cells, " | ") + " |"
		if want == "" {
			lines[2+n] = "| " + strings.Join(cells[:3], " | ") + " | |"
		}
	}
	if stale > 0 && *update {
		out := doc[:i+len(begin)] + strings.Join(lines, "\n") + "\n" + doc[j:]
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %d Tests cells of docs/architecture.md", stale)
	} else if stale > 0 {
		t.Errorf("%d Tests cells are stale: run go test ./internal/boundaries -run TestEnforcementTable -update", stale)
	}
	if want := definedIDs(t); strings.Join(rowIDs, " ") != strings.Join(want, " ") {
		t.Errorf("enforcement table rows = %v,\nwant one per id of docs/requirements.md, in its order: %v", rowIDs, want)
	}
	for id := range gen {
		if !strings.Contains(" "+strings.Join(rowIDs, " ")+" ", " "+id+" ") {
			t.Errorf("tests cite %s (%s), which has no row", id, gen[id])
		}
	}
}

// mdLink finds the target of a markdown link: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingSlug is the anchor a markdown heading gets: lower case, punctuation dropped, spaces
// turned into hyphens.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The repository's documents link to files and headings that exist, so a moved package or a
// renamed section shows up here rather than as a dead link.
func TestDocsLinksResolve(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) < 4 {
		t.Fatalf("docs/*.md = %v, %v: want requirements, architecture, threat-model and wire-formats", docs, err)
	}
	links := 0
	for _, file := range append(docs, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			name, anchor, _ := strings.Cut(target, "#")
			dest := file
			if name != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(name))
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(file), target)
				continue
			}
			if anchor == "" {
				continue
			}
			tb, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, line := range strings.Split(string(tb), "\n") {
				if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && headingSlug(h) == anchor {
					found = true
				}
			}
			if !found {
				t.Errorf("%s links to %s: %s has no heading with that anchor", filepath.Base(file), target, filepath.Base(dest))
			}
		}
	}
	if links < 30 {
		t.Fatalf("found %d relative links: the scan is broken", links)
	}
}
