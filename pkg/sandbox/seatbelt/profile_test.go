package seatbelt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/argv.golden")

func testParams() Params {
	return Params{
		Home:         "/Users/op/.cache/anet/runs/run-1/home",
		Tmp:          "/Users/op/.cache/anet/runs/run-1/tmp",
		Work:         "/Users/op/.cache/anet/work-sandbox/aid1/int1",
		AgentTree:    "/opt/homebrew/lib/node_modules/@anthropic-ai/claude-code",
		DeveloperDir: CommandLineTools,
		Self:         "/opt/homebrew/libexec/anet/anet-sandboxd",
		EndpointPort: 49733,
		OperatorHome: "/Users/op",
	}
}

// M1: the whole command line of a run is pinned: sandbox-exec by its absolute path, the
// static profile (by its hash: the profile's own golden file is profile.sb), every parameter
// as -D, then the agent after "--".
// Regenerate with `go test ./pkg/sandbox/seatbelt -run ArgvGolden -update`.
func TestArgvGoldenM1(t *testing.T) {
	argv, err := Argv(testParams(), []string{"/opt/homebrew/bin/claude", "-p", "--", "--help"})
	if err != nil {
		t.Fatal(err)
	}
	// One argument per line; the profile (argument 3) by its file name and hash, so that the
	// golden file changes with every byte of profile.sb and stays readable.
	sum := sha256.Sum256([]byte(Profile()))
	lines := append([]string{}, argv...)
	lines[2] = "<profile.sb sha256:" + hex.EncodeToString(sum[:]) + ">"
	got := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join("testdata", "argv.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (run with -update to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Argv =\n%s\nwant (%s)\n%s", got, path, want)
	}
	if argv[0] != "/usr/bin/sandbox-exec" || argv[1] != "-p" || argv[2] != Profile() {
		t.Fatalf("argv starts %q %q: want /usr/bin/sandbox-exec -p <profile>", argv[0], argv[1])
	}
}

// M1: the profile is the same bytes on every run; only the -D values differ, and every
// parameter the profile uses is given exactly once.
func TestProfileIsStaticM1(t *testing.T) {
	a := testParams()
	b := testParams()
	b.Home, b.Tmp, b.Work, b.EndpointPort = "/Users/other/c/runs/r2/home", "/Users/other/c/runs/r2/tmp", "/Users/other/c/ws/x/y", 50001
	b.OperatorHome = "/Users/other"
	x, err := Argv(a, []string{"/usr/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	y, err := Argv(b, []string{"/usr/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	if x[2] != y[2] {
		t.Fatal("the profile text differs between two runs")
	}
	seen := map[string]int{}
	for i, s := range x {
		if s == "-D" {
			name, _, _ := strings.Cut(x[i+1], "=")
			seen[name]++
		}
	}
	for _, p := range allParams {
		if seen[p] != 1 {
			t.Errorf("-D %s given %d times, want once", p, seen[p])
		}
	}
	if len(seen) != len(allParams) {
		t.Errorf("-D names %v, want exactly %v", seen, allParams)
	}
}

// M1, S3: a value that could widen the profile or break out of its parameter is refused,
// and Argv renders nothing for it.
func TestParamsValidateM1(t *testing.T) {
	for _, c := range []struct {
		name string
		mut  func(*Params)
		want string
	}{
		{"relative work", func(p *Params) { p.Work = "work" }, ParamWork},
		{"unclean home", func(p *Params) { p.Home = "/Users/op/x/../y" }, ParamHome},
		{"quote in tmp", func(p *Params) { p.Tmp = `/Users/op/t") (allow default` }, ParamTmp},
		{"newline in the agent tree", func(p *Params) { p.AgentTree = "/opt/x\n(allow default)" }, ParamAgentTree},
		{"work is the root", func(p *Params) { p.Work = "/" }, ParamWork},
		{"work is a top-level dir", func(p *Params) { p.Work = "/Users" }, ParamWork},
		{"tmp is the shared tmp", func(p *Params) { p.Tmp = "/private/tmp" }, ParamTmp},
		{"work holds the operator's home", func(p *Params) { p.Work = "/Users/op" }, ParamWork},
		{"agent tree holds the operator's home", func(p *Params) { p.AgentTree = "/Users" }, ParamAgentTree},
		{"no port", func(p *Params) { p.EndpointPort = 0 }, ParamEndpointPort},
		{"relative self", func(p *Params) { p.Self = "anet-sandboxd" }, ParamSelf},
		{"no developer dir", func(p *Params) { p.DeveloperDir = "" }, ParamDeveloperDir},
		{"the developer dir is the root", func(p *Params) { p.DeveloperDir = "/" }, ParamDeveloperDir},
		{"the developer dir is /Applications", func(p *Params) { p.DeveloperDir = "/Applications" }, ParamDeveloperDir},
		{"the developer dir holds the operator's home", func(p *Params) { p.DeveloperDir = "/Users" }, ParamDeveloperDir},
		{"a quote in the developer dir", func(p *Params) { p.DeveloperDir = `/Library/Developer/x") (allow default` }, ParamDeveloperDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testParams()
			c.mut(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, c.want)
			}
			if argv, err := Argv(p, []string{"/usr/bin/true"}); err == nil {
				t.Fatalf("Argv rendered %d args for an invalid parameter", len(argv))
			}
		})
	}
	if _, err := Argv(testParams(), []string{"true"}); err == nil {
		t.Error("Argv accepted a relative program")
	}
}

// A program in one of programTrees needs no agent tree: each is opened by the profile itself
// for reading, mapping and running, whatever the parameters say.
func TestProgramTreesAreInTheProfile(t *testing.T) {
	forms, err := parse(Profile())
	if err != nil {
		t.Fatal(err)
	}
	opened := map[string]map[string]bool{} // operation → subpaths given to it
	for _, f := range forms {
		if f.head() != "allow" {
			continue
		}
		for _, op := range opsOf(f) {
			for _, flt := range filtersOf(f) {
				if flt.head() == "subpath" && flt.kids[1].kind == nodeString {
					if opened[op.text] == nil {
						opened[op.text] = map[string]bool{}
					}
					opened[op.text][flt.kids[1].text] = true
				}
			}
		}
	}
	for _, d := range append(programTrees, neutralTree) {
		for _, op := range []string{"process-exec", "file-read*"} {
			if !opened[op][d] {
				t.Errorf("(allow %s (subpath %q)) is not in the profile", op, d)
			}
		}
	}
	if !inProgramTrees("/usr/bin/true") || inProgramTrees("/Users/op/bin/agent") || inProgramTrees("/usr/binx/agent") {
		t.Error("inProgramTrees misjudges a path")
	}
}
