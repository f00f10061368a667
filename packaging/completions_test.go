package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"anet.dev/anet/pkg/config"
)

// configKeys are the dotted leaf keys of the configuration, from the schema's own rendering
// of the defaults: what `anet config get` and `anet config set` take.
func configKeys(t *testing.T) []string {
	t.Helper()
	b, err := config.Show(config.Default())
	if err != nil {
		t.Fatalf("config.Show(defaults): %v", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatalf("parse config.Show output: %v", err)
	}
	var keys []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := prefix+n.Content[i].Value, n.Content[i+1]
			if v.Kind == yaml.MappingNode {
				walk(v, k+".")
				continue
			}
			keys = append(keys, k)
		}
	}
	walk(root.Content[0], "")
	if len(keys) < 10 {
		t.Fatalf("only %d configuration keys found in %s", len(keys), b)
	}
	sort.Strings(keys)
	return keys
}

// bashComplete returns what the packaged bash completion offers for the words of a command
// line; the last word is the one being completed.
func bashComplete(t *testing.T, words ...string) []string {
	t.Helper()
	bash := requireTool(t, "bash", "bash")
	script := filepath.Join(repoRoot(t), "packaging", "completions", "anet.bash")
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
	}
	prog := "source " + script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
		"COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\nCOMP_LINE=\"${COMP_WORDS[*]}\"\n_anet\n" +
		"printf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("bash completion of %q: %v: %s", words, err, errb.String())
	}
	return strings.Fields(out.String())
}

// fishComplete returns what the packaged fish completion offers for a command line.
func fishComplete(t *testing.T, line string) []string {
	t.Helper()
	fish := requireTool(t, "fish", "fish")
	script := filepath.Join(repoRoot(t), "packaging", "completions", "anet.fish")
	cmd := exec.Command(fish, "--no-config", "-c", "source "+script+"; complete -C "+fishQuote(line))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("fish completion of %q: %v: %s", line, err, errb.String())
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if w, _, _ := strings.Cut(l, "\t"); w != "" {
			got = append(got, w)
		}
	}
	return got
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// missing returns the words of want that got lacks.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// TestCompletionsCommandsAndFlags (C4): for every command of anet as its --help shows it
// now, bash and fish offer each subcommand and each long flag, and the zsh script (checked
// for syntax) names them all.
func TestCompletionsCommandsAndFlags(t *testing.T) {
	zshText := readFile(t, "packaging/completions/_anet")
	for _, n := range cliTree(t, "anet") {
		name := strings.TrimSpace("anet " + strings.Join(n.Path, " "))
		t.Run(name, func(t *testing.T) {
			base := append([]string{"anet"}, n.Path...)
			if len(n.Subs) > 0 {
				if m := missing(n.Subs, bashComplete(t, append(base, "")...)); m != nil {
					t.Errorf("bash: %q offers no %v", name+" ", m)
				}
				if m := missing(n.Subs, fishComplete(t, name+" ")); m != nil {
					t.Errorf("fish: %q offers no %v", name+" ", m)
				}
			}
			if m := missing(n.Flags, bashComplete(t, append(base, "--")...)); m != nil {
				t.Errorf("bash: %q offers no %v", name+" --", m)
			}
			if m := missing(n.Flags, fishComplete(t, name+" --")); m != nil {
				t.Errorf("fish: %q offers no %v", name+" --", m)
			}
			for _, w := range append(append([]string{}, n.Subs...), n.Flags...) {
				re := regexp.MustCompile(`(^|[\s'{,])` + regexp.QuoteMeta(w) + `[\s:=\[}']`)
				if !re.MatchString(zshText) {
					t.Errorf("zsh: _anet does not name %s of %q", w, name)
				}
			}
		})
	}
}

// TestCompletionsConfigKeys: `anet config get|set` complete exactly the configuration's
// keys in bash and fish, and zsh names each of them.
func TestCompletionsConfigKeys(t *testing.T) {
	keys := configKeys(t)
	zshText := readFile(t, "packaging/completions/_anet")
	for _, sub := range []string{"get", "set"} {
		t.Run(sub, func(t *testing.T) {
			notFlag := func(w string) bool { return strings.HasPrefix(w, "-") }
			got := slices.DeleteFunc(bashComplete(t, "anet", "config", sub, ""), notFlag)
			sort.Strings(got)
			if !slices.Equal(got, keys) {
				t.Errorf("bash: anet config %s offers %v, want %v", sub, got, keys)
			}
			got = slices.DeleteFunc(fishComplete(t, "anet config "+sub+" "), notFlag)
			sort.Strings(got)
			if !slices.Equal(got, keys) {
				t.Errorf("fish: anet config %s offers %v, want %v", sub, got, keys)
			}
		})
	}
	for _, k := range keys {
		if !regexp.MustCompile(`\s` + regexp.QuoteMeta(k) + `\s`).MatchString(zshText) {
			t.Errorf("zsh: _anet does not name the key %s", k)
		}
	}
}

// TestCompletionsConfigValues: each value bash and fish offer for `anet config set KEY` is
// one the configuration accepts (config.Set validates the whole file), and they offer the
// same values.
func TestCompletionsConfigValues(t *testing.T) {
	checked := 0
	for _, key := range configKeys(t) {
		bashVals := slices.DeleteFunc(bashComplete(t, "anet", "config", "set", key, ""), func(w string) bool { return strings.HasPrefix(w, "-") })
		fishVals := fishComplete(t, "anet config set "+key+" ")
		sort.Strings(bashVals)
		sort.Strings(fishVals)
		if !slices.Equal(bashVals, fishVals) {
			t.Errorf("anet config set %s: bash offers %v, fish %v", key, bashVals, fishVals)
		}
		for _, v := range bashVals {
			checked++
			t.Run(key+"="+v, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "config.yaml")
				if err := config.Set(path, key, v); err != nil {
					t.Errorf("config.Set(%s, %s) = %v, want nil: the completion offers a value the node refuses", key, v, err)
				}
			})
		}
	}
	if checked < 10 {
		t.Fatalf("only %d completion values checked; the enumerated keys offer none?", checked)
	}
}

// TestCompletionsZshSyntax: zsh parses _anet.
func TestCompletionsZshSyntax(t *testing.T) {
	zsh := requireTool(t, "zsh", "zsh")
	path := filepath.Join(repoRoot(t), "packaging", "completions", "_anet")
	if out, err := exec.Command(zsh, "-n", path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("zsh -n %s = %v: %s, want no error", path, err, out)
	}
	if first := strings.SplitN(readFile(t, "packaging/completions/_anet"), "\n", 2)[0]; first != "#compdef anet" {
		t.Fatalf("_anet first line = %q, want #compdef anet (compinit needs it)", first)
	}
}
