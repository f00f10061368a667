package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed lets flags follow positional arguments (`anet show ID --json`), which
// urfave/cli v2 does not: it stops reading flags at the first positional argument. The
// command path is found by name; after it, each argument that names one of the command's
// flags moves before the positional ones (with its value, for a flag that takes one), and
// each that names one of the app's own flags (--config) moves before the command. "--" ends
// flags as usual, and "-" (standard input) is a positional argument.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	global, rest := leadingFlags(app.Flags, args[1:])
	// The command path: names of (sub)commands, in order.
	var path []string
	cmds := app.Commands
	var cmd *cli.Command
	for len(rest) > 0 {
		c := findCommand(cmds, rest[0])
		if c == nil {
			break
		}
		cmd = c
		path = append(path, rest[0])
		rest = rest[1:]
		cmds = c.Subcommands
		if len(cmds) == 0 {
			break
		}
		var more []string
		more, rest = leadingFlags(app.Flags, rest)
		global = append(global, more...)
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	flags, moreGlobal, positional := splitCommandArgs(cmd.Flags, app.Flags, rest)
	out := append([]string{args[0]}, global...)
	out = append(out, moreGlobal...)
	out = append(out, path...)
	out = append(out, flags...)
	return append(out, positional...)
}

// leadingFlags takes the flags at the start of args that are among flags, with their values,
// and returns them and what is left.
func leadingFlags(flags []cli.Flag, args []string) (taken, rest []string) {
	for i := 0; i < len(args); i++ {
		f, inline := lookupFlag(flags, args[i])
		if f == nil {
			return taken, args[i:]
		}
		taken = append(taken, args[i])
		if takesValue(f) && !inline && i+1 < len(args) {
			i++
			taken = append(taken, args[i])
		}
	}
	return taken, nil
}

// splitCommandArgs sorts a leaf command's arguments into its flags, the app's flags and the
// positional arguments, keeping each group's order.
func splitCommandArgs(cmdFlags, appFlags []cli.Flag, args []string) (flags, global, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i:]...)
			break
		}
		dst := &flags
		f, inline := lookupFlag(cmdFlags, a)
		if f == nil {
			if f, inline = lookupFlag(appFlags, a); f != nil {
				dst = &global
			}
		}
		if f == nil {
			if looksLikeFlag(a) {
				// An unknown flag: leave it where the parser reports it, with its name.
				flags = append(flags, a)
				continue
			}
			positional = append(positional, a)
			continue
		}
		*dst = append(*dst, a)
		if takesValue(f) && !inline && i+1 < len(args) {
			i++
			*dst = append(*dst, args[i])
		}
	}
	return flags, global, positional
}

// lookupFlag finds the flag an argument names ("-x", "--name", "--name=value").
func lookupFlag(flags []cli.Flag, arg string) (cli.Flag, bool) {
	if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
		return nil, false
	}
	name := strings.TrimLeft(arg, "-")
	name, _, inline := strings.Cut(name, "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f, inline
			}
		}
	}
	if name == "help" || name == "h" {
		return cli.HelpFlag, inline
	}
	return nil, false
}

// flagShaped is what an unknown flag looks like: a dash or two, a name, perhaps "=value".
// Anything else that starts with a dash ("-1", "- a list item", "-") is text.
var flagShaped = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9_-]*(=|$)`)

func looksLikeFlag(a string) bool { return flagShaped.MatchString(a) }

func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// commandNotFound answers an unknown command with the nearest known one.
func commandNotFound(c *cli.Context, name string) {
	cmds := c.App.Commands
	where := "anet"
	if c.Command != nil && c.Command.Name != c.App.Name && len(c.Command.Subcommands) > 0 {
		cmds = c.Command.Subcommands
		where = "anet " + c.Command.Name
	}
	msg := fmt.Sprintf("%s: unknown command %q", where, name)
	if s := nearestCommand(cmds, name); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	msg += fmt.Sprintf(" (%s --help lists the commands)", where)
	cli.HandleExitCoder(cli.Exit(msg, 2))
}

// nearestCommand is the known command closest to name by edit distance, or "" when none is
// close enough to be what the operator meant.
func nearestCommand(cmds []*cli.Command, name string) string {
	best, bestD := "", len(name)/2+1
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			if d := editDistance(name, n); d < bestD || (strings.HasPrefix(n, name) && best == "") {
				best, bestD = n, d
			}
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
