package packaging

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// binDir holds the four binaries, built once by TestMain from the current tree so that the
// tests compare the packaging with the CLI as it is now, not with a stale bin/.
var binDir string

// commands are the programs of the suite, as the Makefile builds them: its CMDS, and the run
// init (RUNINIT), built from inside anet-sandboxd's directory.
var commands = []string{"anetd", "anet", "anet-sandboxd", "anet-egress", "anet-runinit"}

// cmdPackage is the package a program of commands is built from.
func cmdPackage(name string) string {
	if name == "anet-runinit" {
		return "./cmd/anet-sandboxd/anet-runinit"
	}
	return "./cmd/" + name
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anet-packaging-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "packaging tests:", err)
		os.Exit(2)
	}
	// Reachable by nobody, which runs the programs when the tests run as root.
	os.Chmod(dir, 0o755)
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if pkg.dist != "" {
		os.RemoveAll(pkg.dist)
	}
	if darwinDist != "" {
		os.RemoveAll(darwinDist)
	}
	os.Exit(code)
}

// repoRoot is the module root: the tests run in packaging/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root %s has no go.mod: %v", root, err)
	}
	return root
}

var built = map[string]bool{}

// binary builds (once per test run) and returns the path of one of the suite's programs.
func binary(t *testing.T, name string) string {
	t.Helper()
	return binaryPkg(t, name, cmdPackage(name))
}

// binaryPkg builds (once per test run) the program of a package as name.
func binaryPkg(t *testing.T, name, pkgPath string) string {
	t.Helper()
	out := filepath.Join(binDir, name)
	if built[name] {
		return out
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-o", out, pkgPath)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkgPath, err, b)
	}
	built[name] = true
	return out
}

// requireTool fails the test loudly when a program the check needs is missing.
func requireTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed for this check and is not installed: apt-get install %s", name, debianPackage)
	}
	return p
}

// cliNode is one command of a program's CLI, as its --help shows it.
type cliNode struct {
	Path  []string // words after the program name; empty for the program itself
	Flags []string // long flags with their dashes, e.g. --json
	Subs  []string // visible subcommands, without help
}

var (
	sectionRE = regexp.MustCompile(`^[A-Z][A-Z ]*:$`)
	flagRE    = regexp.MustCompile(`^\s+(--[a-z0-9][a-z0-9-]*)`)
	commandRE = regexp.MustCompile(`^\s+([a-z0-9][a-z0-9-]*)(,|\s)`)
)

// parseHelp reads the flags and subcommands out of urfave/cli's help text.
func parseHelp(text string) (flags, subs []string) {
	section := ""
	for _, line := range strings.Split(text, "\n") {
		if sectionRE.MatchString(line) {
			section = line
			continue
		}
		switch section {
		case "COMMANDS:":
			if m := commandRE.FindStringSubmatch(line); m != nil && m[1] != "help" {
				subs = append(subs, m[1])
			}
		case "OPTIONS:", "GLOBAL OPTIONS:":
			if m := flagRE.FindStringSubmatch(line); m != nil {
				flags = append(flags, m[1])
			}
		}
	}
	return flags, subs
}

// cliTree walks program's --help recursively and returns every visible command.
func cliTree(t *testing.T, program string) []cliNode {
	t.Helper()
	bin := binary(t, program)
	var nodes []cliNode
	var walk func(path []string)
	walk = func(path []string) {
		args := append(append([]string{}, path...), "--help")
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", program, strings.Join(args, " "), err, out.String())
		}
		flags, subs := parseHelp(out.String())
		nodes = append(nodes, cliNode{Path: path, Flags: flags, Subs: subs})
		for _, s := range subs {
			walk(append(append([]string{}, path...), s))
		}
	}
	walk(nil)
	if len(nodes) == 0 || len(nodes[0].Flags) == 0 {
		t.Fatalf("%s --help: no flags parsed; has urfave/cli's help format changed?", program)
	}
	return nodes
}

// readFile returns a file of the repository as text.
func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}
