package boundaries

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
var root = filepath.Join("..", "..")

// walkRepo calls fn for every file of the repository below root, skipping hidden dirs,
// testdata and build output, with its path relative to root.
func walkRepo(t *testing.T, fn func(rel string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "bin" || rel == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeType != 0 {
			return nil
		}
		return fn(filepath.ToSlash(rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forEachGoFile parses every Go file of the repository (test files too when withTests) and
// calls fn with it.
func forEachGoFile(t *testing.T, fset *token.FileSet, withTests bool, fn func(f *ast.File)) {
	t.Helper()
	walkRepo(t, func(rel string) error {
		if !strings.HasSuffix(rel, ".go") || (!withTests && strings.HasSuffix(rel, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments)
		if err != nil {
			return err
		}
		fn(f)
		return nil
	})
}
