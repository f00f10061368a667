package seatbelt

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"anet.dev/anet/pkg/sandbox"
)

// fakeHost is a Mac's file system as DeveloperDir sees it: the select link's target (""
// for none) and the paths that resolve, each to its resolved path.
type fakeHost struct {
	link     string
	resolves map[string]string
}

func (h fakeHost) readlink(p string) (string, error) {
	if p != SelectLink || h.link == "" {
		return "", &fs.PathError{Op: "readlink", Path: p, Err: fs.ErrNotExist}
	}
	return h.link, nil
}

func (h fakeHost) resolve(p string) (string, error) {
	if r, ok := h.resolves[p]; ok {
		return r, nil
	}
	return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
}

const (
	xcode15 = "/Applications/Xcode-15.4.app/Contents/Developer"
	homeApp = "/Users/op/Applications/Xcode.app/Contents/Developer"
)

// M1: the developer dir a run is given is the one its xcrun shims will use (the select
// link, then Xcode's, then the Command Line Tools'), resolved, and never a dir that is not a
// developer dir or that the profile must not open.
func TestDeveloperDirM1(t *testing.T) {
	clt := map[string]string{CommandLineTools: CommandLineTools}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	for _, c := range []struct {
		name string
		host fakeHost
		want string
	}{
		{"Command Line Tools selected", fakeHost{CommandLineTools, clt}, CommandLineTools},
		{"Xcode selected", fakeHost{XcodeDeveloperDir, with(clt, XcodeDeveloperDir, XcodeDeveloperDir)}, XcodeDeveloperDir},
		{"Xcode selected through a link to a versioned app", fakeHost{XcodeDeveloperDir, with(clt, XcodeDeveloperDir, xcode15)}, xcode15},
		{"a relative select link", fakeHost{"../../../Applications/Xcode-15.4.app/Contents/Developer", with(clt, xcode15, xcode15)}, xcode15},
		{"Xcode kept in the operator's Applications", fakeHost{homeApp, with(clt, homeApp, homeApp)}, homeApp},
		{"the selected Xcode deleted", fakeHost{xcode15, clt}, CommandLineTools},
		{"nothing selected, Xcode installed", fakeHost{"", with(clt, XcodeDeveloperDir, XcodeDeveloperDir)}, XcodeDeveloperDir},
		{"nothing selected, the Command Line Tools installed", fakeHost{"", clt}, CommandLineTools},
		{"no developer tools at all", fakeHost{"", nil}, CommandLineTools},
		{"selected: the root", fakeHost{"/", with(clt, "/", "/")}, CommandLineTools},
		{"selected: a data dir of the operator's", fakeHost{"/Users/op/Library", with(clt, "/Users/op/Library", "/Users/op/Library")}, CommandLineTools},
		{"selected: every app", fakeHost{"/Applications", with(clt, "/Applications", "/Applications")}, CommandLineTools},
		{"selected: a bundle named only .app", fakeHost{"/Applications/.app/Contents/Developer", with(clt, "/Applications/.app/Contents/Developer", "/Applications/.app/Contents/Developer")}, CommandLineTools},
		{"selected: a path that would end the parameter", fakeHost{`/A".app/Contents/Developer`, with(clt, `/A".app/Contents/Developer`, `/A".app/Contents/Developer`)}, CommandLineTools},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := DeveloperDir(c.host.readlink, c.host.resolve, "/Users/op")
			if got != c.want {
				t.Fatalf("DeveloperDir = %q, want %q", got, c.want)
			}
			p := testParams()
			p.DeveloperDir = got
			if err := p.Validate(); err != nil {
				t.Fatalf("the developer dir %q is no valid parameter: %v", got, err)
			}
		})
	}
}

// M1, S5: what a run gets on each kind of Mac: Homebrew at either prefix or none, the agent
// installed through it or natively, each developer dir. The parameters name the agent's tree
// (none of its own for a program the profile opens anyway) and the developer dir; the
// environment is the launcher's base and the handed-in variables whatever the host, so an
// SSL_CERT_FILE handed in reaches the run unchanged and nothing points OpenSSL or xcrun
// elsewhere.
func TestRunBuildersM1(t *testing.T) {
	// An agent is run by its resolved path: npm's claude is cli.js in its package, the native
	// claude a versioned file that ~/.local/bin/claude links to.
	native := "/Users/op/.local/share/claude/versions/2.1.90"
	npmTree := "/opt/homebrew/lib/node_modules/@anthropic-ai/claude-code"
	for _, c := range []struct {
		name      string
		prog      string
		named     bool   // the spec names the agent's tree
		tree      string // the plan's resolved tree
		host      fakeHost
		wantTree  string
		wantDev   string
		wantError bool
	}{
		{"Apple silicon Homebrew, claude through npm, Command Line Tools", npmTree + "/cli.js", true, npmTree,
			fakeHost{CommandLineTools, map[string]string{CommandLineTools: CommandLineTools}}, npmTree, CommandLineTools, false},
		{"Apple silicon Homebrew, a formula's program, Xcode", "/opt/homebrew/Cellar/codex/0.63.0/bin/codex", false, "",
			fakeHost{XcodeDeveloperDir, map[string]string{XcodeDeveloperDir: XcodeDeveloperDir}}, neutralTree, XcodeDeveloperDir, false},
		{"Intel Homebrew, a linked program, Command Line Tools", "/usr/local/bin/claude", false, "",
			fakeHost{"", map[string]string{CommandLineTools: CommandLineTools}}, neutralTree, CommandLineTools, false},
		{"Intel Homebrew, claude through npm, no developer tools", "/usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js", true, "/usr/local/lib/node_modules/@anthropic-ai/claude-code",
			fakeHost{}, "/usr/local/lib/node_modules/@anthropic-ai/claude-code", CommandLineTools, false},
		{"no Homebrew, the native claude, Xcode", native, false, filepath.Dir(native),
			fakeHost{"", map[string]string{XcodeDeveloperDir: xcode15}}, filepath.Dir(native), xcode15, false},
		{"no Homebrew, a system program", "/usr/bin/true", false, "", fakeHost{}, neutralTree, CommandLineTools, false},
		{"a program outside the tree named", "/opt/homebrew/bin/node", true, "/Users/op/tree", fakeHost{}, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree, err := agentTreeOf(c.prog, c.named, c.tree)
			if c.wantError {
				if err == nil {
					t.Fatalf("agentTreeOf(%s) = %s, want an error", c.prog, tree)
				}
				return
			}
			if err != nil || tree != c.wantTree {
				t.Fatalf("agentTreeOf(%s) = %q, %v, want %q", c.prog, tree, err, c.wantTree)
			}
			p := testParams()
			p.AgentTree, p.DeveloperDir = tree, DeveloperDir(c.host.readlink, c.host.resolve, p.OperatorHome)
			argv, err := Argv(p, []string{c.prog})
			if err != nil {
				t.Fatal(err)
			}
			defs := map[string]string{}
			for i := 3; i < len(argv) && argv[i] == "-D"; i += 2 {
				k, v, _ := strings.Cut(argv[i+1], "=")
				defs[k] = v
			}
			if defs[ParamAgentTree] != c.wantTree || defs[ParamDeveloperDir] != c.wantDev {
				t.Errorf("-D AGENT_TREE=%q DEVELOPER_DIR=%q, want %q and %q", defs[ParamAgentTree], defs[ParamDeveloperDir], c.wantTree, c.wantDev)
			}
			if argv[len(argv)-1] != c.prog || argv[len(argv)-2] != "--" {
				t.Errorf("argv ends %q, want -- %s", argv[len(argv)-2:], c.prog)
			}

			given := []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:49733", "SSL_CERT_FILE=" + p.Home + "/endpoint-ca.pem"}
			env := RunEnv(p.Home, p.Tmp, given)
			want := append(sandbox.HostPathEnv(p.Home, p.Tmp, PATH), given...)
			if !slices.Equal(env, want) {
				t.Fatalf("RunEnv = %q, want %q", env, want)
			}
			for _, kv := range env {
				name, _, _ := strings.Cut(kv, "=")
				if name == "OPENSSL_CONF" || name == "DEVELOPER_DIR" || name == "SSL_CERT_DIR" {
					t.Errorf("the run's environment holds %s: the profile opens what OpenSSL and xcrun need (S5)", kv)
				}
			}
		})
	}
	if env := RunEnv("/h", "/t", nil); !slices.Equal(env, sandbox.HostPathEnv("/h", "/t", PATH)) {
		t.Errorf("RunEnv without handed-in variables = %q, want the base alone", env)
	}
}
