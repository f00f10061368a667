package agents

import (
	"slices"
	"strings"
	"testing"
)

// hostileTasks are requester texts that would change the command if they reached a shell or
// an option parser. Each must arrive as the agent's prompt, verbatim, in one argv element.
var hostileTasks = []struct{ name, task string }{
	{"quotes", `say "hi" and 'bye'`},
	{"command substitution", "$(touch /tmp/pwned) `id` ${HOME}"},
	{"newlines", "line one\nline two\r\n--line three"},
	{"leading dash", "-rf /"},
	{"long flag", "--help"},
	{"flag with value", "--output-format=text"},
	{"end of options", "--"},
	{"short flag cluster", "-p"},
	{"codex subcommand", "review"},
	{"equals and dashes", "--message=--dev -m x"},
	{"unicode", "résumé — 日本語 🚀"},
	{"glob and redirect", "* > /etc/passwd; rm -rf ~ | tee"},
}

// taskPrefix says how each CLI receives the task: after "--" as the last argument, or as the
// value of a long option in "--opt=value" form (argparse and commander never read such a value
// as a flag, whatever it starts with).
func taskPrefix(a Agent) (prefix string, dashdash bool) {
	switch a {
	case Hermes:
		return "--oneshot=", false
	}
	return "", true
}

// TestTaskVerbatimNeverAFlag: for every agent and mode, the command line is the same option
// list whatever the task says, and the task is its last element, verbatim (after "--", or as
// the value in the CLI's --opt=value form). Checked by hand against claude, codex and opencode
// with "--help", "-rf …", "review" and `$(id)`: each reached the model as the prompt.
func TestTaskVerbatimNeverAFlag(t *testing.T) {
	for _, a := range append(sandboxAgents, Cursor) {
		for _, sandboxed := range []bool{true, false} {
			if a == Cursor && sandboxed {
				continue
			}
			ref := params(a, sandboxed)
			refArgv := mustFor(t, ref).Argv
			for _, h := range hostileTasks {
				t.Run(string(a)+"/"+map[bool]string{true: "sandbox", false: "direct"}[sandboxed]+"/"+h.name, func(t *testing.T) {
					p := ref
					p.Task = h.task
					argv := mustFor(t, p).Argv
					n := len(argv)
					if n != len(refArgv) || !slices.Equal(argv[:n-1], refArgv[:n-1]) {
						t.Fatalf("argv for task %q = %q, want the options of %q", h.task, argv, refArgv)
					}
					prefix, dashdash := taskPrefix(a)
					if got, want := argv[n-1], prefix+h.task; got != want {
						t.Errorf("last argv element = %q, want %q", got, want)
					}
					if dashdash && argv[n-2] != "--" {
						t.Errorf("argv[%d] = %q, want \"--\" before the task", n-2, argv[n-2])
					}
					if !dashdash && slices.Contains(argv[:n-1], "--") {
						t.Errorf("argv %q has \"--\" before an option-value task", argv)
					}
					for i, e := range argv[:n-1] {
						if h.task != "" && strings.Contains(e, h.task) && len(h.task) > 2 {
							t.Errorf("argv[%d] = %q also contains the task", i, e)
						}
					}
				})
			}
		}
	}
}
