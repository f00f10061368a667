package boundaries

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// pkg/limits and pkg/nodedirs are leaves: every binary links them (anet-sandboxd in place of
// pkg/config), so they must bring nothing else with them.
func TestFiguresPackageIsALeaf(t *testing.T) {
	for _, pkg := range []string{"anet.dev/anet/pkg/limits", "anet.dev/anet/pkg/nodedirs"} {
		d := deps(t, pkg)
		if !d["fmt"] {
			t.Fatalf("go list -deps %s = %v: the check would prove nothing", pkg, d)
		}
		for p := range d {
			if strings.Contains(strings.Split(p, "/")[0], ".") && p != pkg {
				t.Errorf("%s links %s; it may link only the standard library", pkg, p)
			}
		}
	}
}

// standaloneNumber finds a number that stands as a figure in a sentence: digits not part of
// a word, version, path, time or host:port ("WSL2", "HTTP/1.1", "anet-msg-v1" are not).
var standaloneNumber = regexp.MustCompile(`(?:^|[^\w./:\-])(\d+)(?:$|[^\w./:\-])`)

// notFigures are numbers a sentence may type: they are no figure of the node.
var notFigures = map[string]string{
	"0":   "zero as a setting's value (a budget of 0)",
	"600": "the file mode in a chmod command",
}

// R1, E3, H2, S6, E9: a sentence that states a figure builds it from the constant (pkg/limits
// or the owning package's), so it cannot disagree with the figure enforced. Every string
// literal inside a reason-catalog entry's Text, and every `anet: ` literal, is free of
// hand-typed numbers.
func TestNoSentenceTypesAFigure(t *testing.T) {
	fset := token.NewFileSet()
	var checked int
	check := func(e ast.Expr) {
		ast.Inspect(e, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			checked++
			for _, m := range standaloneNumber.FindAllStringSubmatch(s, -1) {
				if _, ok := notFigures[m[1]]; !ok {
					t.Errorf("%s: sentence %q types the number %s by hand; build it from the constant", fset.Position(lit.Pos()), s, m[1])
				}
			}
			return true
		})
	}
	forEachGoFile(t, fset, false, func(f *ast.File) {
		inReasons := f.Name.Name == "reasons"
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if isEntryType(x.Type, inReasons) {
					entryText(x, check)
				}
				if at, ok := x.Type.(*ast.ArrayType); ok && isEntryType(at.Elt, inReasons) {
					for _, el := range x.Elts {
						if cl, ok := el.(*ast.CompositeLit); ok && cl.Type == nil {
							entryText(cl, check)
						}
					}
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(x.Value); x.Kind == token.STRING && err == nil && strings.HasPrefix(s, "anet: ") {
					check(x)
				}
			}
			return true
		})
	})
	if checked < 80 {
		t.Fatalf("checked only %d sentence literals: the scan is broken", checked)
	}
}

func isEntryType(e ast.Expr, inReasons bool) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "reasons" && x.Sel.Name == "Entry"
	case *ast.Ident:
		return inReasons && x.Name == "Entry"
	}
	return false
}

// entryText hands the Text of a reasons.Entry literal (keyed, or third positional) to check.
func entryText(cl *ast.CompositeLit, check func(ast.Expr)) {
	for i, el := range cl.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Text" {
				check(kv.Value)
			}
		} else if i == 2 {
			check(el)
		}
	}
}
