package boundaries

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// startsProcess are the calls that start a program.
var startsProcess = map[string]bool{
	"exec.Command": true, "exec.CommandContext": true, "os.StartProcess": true,
	"syscall.ForkExec": true, "syscall.Exec": true, "unix.Exec": true,
}

// mayStartHelpers are anetd's packages that start a program, and why it is only a helper:
// the supervisor starts anet-sandboxd and anet-egress (C3), and preflight runs
// `anet-egress check`, the helper's own verdict on the keys file, found where the helpers are.
var mayStartHelpers = map[string]string{
	"pkg/privsep":   "the helper supervisor",
	"pkg/preflight": "`anet-egress check`, by helperpath",
}

// TestAnetdStartsOnlyItsHelpers (C3): anetd starts no program but its two helpers; an agent,
// an interpreter's --version, a shell are anet-sandboxd's to run. Every non-test file of every
// package of the module anetd links is read, and a call that starts a process outside the
// packages above fails, naming the file and line. A composite exec.Cmd literal counts too.
func TestAnetdStartsOnlyItsHelpers(t *testing.T) {
	for _, tags := range []string{"", "anettest"} {
		t.Run("tags="+tags, func(t *testing.T) { anetdStartsOnlyItsHelpers(t, tags) })
	}
}

func anetdStartsOnlyItsHelpers(t *testing.T, tags string) {
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, "-f", "{{if not .Standard}}{{.ImportPath}} {{.Dir}} {{join .GoFiles \" \"}}{{end}}", "anet.dev/anet/cmd/anetd").Output()
	if err != nil {
		t.Fatalf("go list -deps cmd/anetd: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasPrefix(f[0], "anet.dev/anet/") {
			continue
		}
		pkg := strings.TrimPrefix(f[0], "anet.dev/anet/")
		for _, name := range f[2:] {
			seen++
			file := filepath.Join(f[1], name)
			for _, at := range processStarts(t, file) {
				if _, ok := mayStartHelpers[pkg]; !ok {
					t.Errorf("%s: %s starts a program in anetd, which starts only its helpers", at, pkg)
				}
			}
		}
	}
	if seen < 50 {
		t.Fatalf("read %d files of anetd's packages: the check would prove nothing", seen)
	}
	// The rule bites: the supervisor's own start is found.
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "anet.dev/anet/pkg/privsep" {
			for _, name := range f[2:] {
				found = found || len(processStarts(t, filepath.Join(f[1], name))) > 0
			}
		}
	}
	if !found {
		t.Fatal("no process start found in pkg/privsep, which starts the helpers: the check reads nothing")
	}
}

// processStarts lists the places in file that start a process, as file:line.
func processStarts(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	var at []string
	ast.Inspect(f, func(n ast.Node) bool {
		var sel *ast.SelectorExpr
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, _ = n.Fun.(*ast.SelectorExpr)
		case *ast.CompositeLit:
			sel, _ = n.Type.(*ast.SelectorExpr)
			if sel != nil && !(isIdent(sel.X, "exec") && sel.Sel.Name == "Cmd") {
				sel = nil
			}
			if sel != nil {
				at = append(at, fset.Position(n.Pos()).String())
				return true
			}
		}
		if sel != nil {
			if x, ok := sel.X.(*ast.Ident); ok && startsProcess[x.Name+"."+sel.Sel.Name] {
				at = append(at, fset.Position(n.Pos()).String())
			}
		}
		return true
	})
	return at
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
