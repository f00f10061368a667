package boundaries

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"testing"

	// Every package that registers reason codes, so that the catalog is complete here.
	_ "anet.dev/anet/pkg/agents"
	_ "anet.dev/anet/pkg/autoreply"
	_ "anet.dev/anet/pkg/config"
	_ "anet.dev/anet/pkg/doctor"
	_ "anet.dev/anet/pkg/egress"
	_ "anet.dev/anet/pkg/endpoint"
	_ "anet.dev/anet/pkg/modelproxy"
	_ "anet.dev/anet/pkg/node"
	_ "anet.dev/anet/pkg/peer"
	"anet.dev/anet/pkg/reasons"
	_ "anet.dev/anet/pkg/sandbox"
)

// Every refusal has a reason code from one catalog: each constant of type reasons.Code
// declared anywhere in the tree must be registered, with a sentence, and every rule an agent
// sees reads as a sentence, not a code.
func TestEveryDeclaredCodeIsInTheCatalog(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]string{} // code → where
	forEachGoFile(t, fset, false, func(f *ast.File) {
		isReasonsPkg := f.Name.Name == "reasons"
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			var lastType ast.Expr
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if vs.Type != nil {
					lastType = vs.Type
				} else if len(vs.Values) > 0 {
					lastType = nil
				}
				if !isCodeType(lastType, isReasonsPkg) {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					code, _ := strconv.Unquote(lit.Value)
					declared[code] = fset.Position(lit.Pos()).String()
				}
			}
		}
	})
	if len(declared) < 50 {
		t.Fatalf("found only %d declared codes: the scan is broken", len(declared))
	}
	for code, where := range declared {
		e, ok := reasons.Lookup(reasons.Code(code))
		if !ok {
			t.Errorf("code %q (%s) is not registered in pkg/reasons", code, where)
			continue
		}
		if strings.TrimSpace(e.Text) == "" || e.Text == code {
			t.Errorf("code %q (%s) has no sentence", code, where)
		}
	}
}

func isCodeType(e ast.Expr, inReasons bool) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "reasons" && x.Sel.Name == "Code"
	case *ast.Ident:
		return inReasons && x.Name == "Code"
	}
	return false
}
