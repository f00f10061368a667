package seatbelt

import (
	"errors"
	"strings"
	"testing"
)

// allParams are the names Argv supplies.
var allParams = []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamSelf, ParamEndpointPort, ParamOperatorHome}

// M1: the shipped profile passes its own linter with exactly the parameters the argument
// builder supplies.
func TestShippedProfilePassesM1(t *testing.T) {
	if err := Lint(Profile(), allParams); err != nil {
		t.Fatalf("Lint(profile.sb) = %v", err)
	}
}

// violated returns the rules err names.
func violated(err error) []string {
	var ce LintError
	if !errors.As(err, &ce) {
		return nil
	}
	var out []string
	for _, v := range ce {
		out = append(out, v.Rule)
	}
	return out
}

// M1, S2, S3: each case breaks the shipped profile in one way, most by appending one rule
// (Seatbelt applies the last match, so an appended allow wins over everything above it),
// and the linter refuses it for the rule it breaks.
func TestLintRefusesDangerousFormsM1(t *testing.T) {
	appended := []struct {
		name, rule, form string
	}{
		{"allow default", RuleOperation, `(allow default)`},
		{"every file readable", RuleUnfiltered, `(allow file-read*)`},
		{"every file writable", RuleUnfiltered, `(allow file-write*)`},
		{"read data everywhere", RuleUnfiltered, `(allow file-read-data)`},
		{"the whole network", RuleOperation, `(allow network*)`},
		{"outbound anywhere", RuleUnfiltered, `(allow network-outbound)`},
		{"outbound to any address", RuleNetwork, `(allow network-outbound (remote ip "*:*"))`},
		{"outbound to any host on 443", RuleNetwork, `(allow network-outbound (remote ip "*:443"))`},
		{"every local port", RuleNetwork, `(allow network-outbound (remote ip "localhost:*"))`},
		{"local ip on outbound", RuleNetwork, `(allow network-outbound (local ip "*:*"))`},
		{"local ip beside a good remote", RuleNetwork, `(allow network-outbound (remote ip "localhost:8080") (local ip "localhost:*"))`},
		{"docker socket", RuleNetwork, `(allow network-outbound (remote unix-socket (path-literal "/private/var/run/docker.sock")))`},
		{"inbound", RuleOperation, `(allow network-inbound (local ip "localhost:*"))`},
		{"bind", RuleOperation, `(allow network-bind (local ip "localhost:*"))`},
		{"internet sockets", RuleNetwork, `(allow system-socket (socket-domain AF_INET))`},
		{"exec anywhere", RuleUnfiltered, `(allow process-exec)`},
		{"exec from the root", RuleBroadPath, `(allow process-exec (subpath "/"))`},
		{"exec outside the sandbox", RuleModifier, `(allow process-exec (literal "/bin/ps") (with no-sandbox))`},
		{"exec star", RuleOperation, `(allow process-exec* (literal "/bin/ps"))`},
		{"outside the sandbox inside an IOKit filter", RuleFilter, `(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient" (with no-sandbox)))`},
		{"the system volume, data volume included", RuleBroadPath, `(allow file-read* (subpath "/System"))`},
		{"the data volume through its firmlink", RuleBroadPath, `(allow file-read* (subpath "/System/Volumes/Data/Users"))`},
		{"every home", RuleBroadPath, `(allow file-read* (subpath "/Users"))`},
		{"one home by name", RuleBroadPath, `(allow file-read* (subpath "/Users/op/.ssh"))`},
		{"the operator's home by parameter", RuleBroadPath, `(allow file-read* (subpath (string-append (param "OPERATOR_HOME") "/.ssh")))`},
		{"user temp dirs", RuleBroadPath, `(allow file-read* (subpath "/private/var/folders"))`},
		{"regex of everything", RuleFilter, `(allow file-read* (regex #"^/"))`},
		{"prefix filter", RuleFilter, `(allow file-read* (prefix "/Users"))`},
		{"compound filter", RuleFilter, `(allow file-read* (require-any (subpath "/Users")))`},
		{"ancestors readable", RuleFilter, `(allow file-read* (path-ancestors (param "WORK_DIR")))`},
		{"write the shared tmp", RuleBroadPath, `(allow file-write* (subpath "/private/tmp"))`},
		{"write a system dir", RuleWrite, `(allow file-write* (subpath "/usr/local/bin"))`},
		{"write the agent", RuleWrite, `(allow file-write* (subpath (param "AGENT_TREE")))`},
		{"write data to a device", RuleWrite, `(allow file-write-data (literal "/dev/disk0"))`},
		{"ioctl a file", RuleFilter, `(allow file-ioctl (subpath (param "WORK_DIR")))`},
		{"keychain daemon", RuleMachService, `(allow mach-lookup (global-name "com.apple.SecurityServer"))`},
		{"preferences daemon", RuleMachService, `(allow mach-lookup (global-name "com.apple.cfprefsd.agent"))`},
		{"DNS", RuleMachService, `(allow mach-lookup (global-name "com.apple.dnssd.service"))`},
		{"revocation fetcher", RuleMachService, `(allow mach-lookup (global-name "com.apple.ocspd"))`},
		{"an unreviewed service", RuleMachService, `(allow mach-lookup (global-name "com.apple.windowserver.active"))`},
		{"every apple service", RuleMachService, `(allow mach-lookup (global-name-prefix "com.apple."))`},
		{"every service", RuleUnfiltered, `(allow mach-lookup)`},
		{"preferences", RuleOperation, `(allow user-preference-read)`},
		{"launch services", RuleOperation, `(allow lsopen)`},
		{"apple events", RuleOperation, `(allow appleevent-send)`},
		{"kernel settings", RuleOperation, `(allow sysctl-write (sysctl-name "kern.grade_cputype"))`},
		{"an unreviewed operation", RuleOperation, `(allow nvram-get)`},
		{"signal anyone", RuleUnfiltered, `(allow signal)`},
		{"inspect others", RuleFilter, `(allow process-info* (target others))`},
		{"any IOKit client", RuleFilter, `(allow iokit-open (iokit-user-client-class "IOSurfaceRootUserClient"))`},
		{"report modifier", RuleModifier, `(deny file-read* (subpath "/x") (with send-signal SIGKILL))`},
		{"import a system profile", RuleShape, `(import "bsd.sb")`},
		{"a definition", RuleShape, `(define (f) (allow default))`},
		{"an unsupplied parameter", RuleParam, `(allow file-read* (subpath (param "EXTRA_DIR")))`},
		{"a bad parameter form", RuleParam, `(allow file-read* (subpath (param EXTRA)))`},
	}
	for _, c := range appended {
		t.Run(c.name, func(t *testing.T) {
			err := Lint(Profile()+"\n"+c.form+"\n", allParams)
			if got := violated(err); !contains(got, c.rule) {
				t.Fatalf("Lint(profile + %s) = %v, want a %s violation", c.form, err, c.rule)
			}
		})
	}
	edited := []struct {
		name, rule  string
		old, new    string
		params      []string
		wantInError string
	}{
		{"no deny default", RuleShape, `(deny default (with message "anet-run"))`, `(allow process-fork)`, nil, "(deny default)"},
		{"version 2", RuleShape, `(version 1)`, `(version 2)`, nil, "(version 1)"},
		{"unbalanced open", RuleSyntax, `(allow process-fork)`, `(allow process-fork`, nil, "never closed"},
		{"unbalanced close", RuleSyntax, `(allow process-fork)`, `(allow process-fork))`, nil, "closes nothing"},
		{"unterminated string", RuleSyntax, `(global-name "com.apple.trustd.agent")`, `(global-name "com.apple.trustd.agent)`, nil, "string"},
		{"non-ASCII", RuleSyntax, `(literal "/dev/null")`, "(literal \"/dev/nu\u200bll\")", nil, "ASCII"},
		{"a regex carried over a line by a backslash", RuleSyntax, `(regex #"^/dev/ttys[0-9]+$")`, "(regex #\"^/dev/ttys[0-9]+$\\\n\")", nil, "span lines"},
		{"a control character", RuleSyntax, `(literal "/dev/null")`, "(literal \"/dev/\x1bnull\")", nil, "ASCII"},
		{"a parameter not supplied", RuleParam, "", "", []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamSelf, ParamOperatorHome}, ParamEndpointPort},
		{"a parameter supplied but unused", RuleParam, "", "", append(append([]string{}, allParams...), "EXTRA"), "EXTRA"},
	}
	for _, c := range edited {
		t.Run(c.name, func(t *testing.T) {
			p := Profile()
			if c.old != "" {
				if !strings.Contains(p, c.old) {
					t.Fatalf("the profile no longer contains %q: update the case", c.old)
				}
				p = strings.Replace(p, c.old, c.new, 1)
			}
			params := c.params
			if params == nil {
				params = allParams
			}
			err := Lint(p, params)
			if got := violated(err); !contains(got, c.rule) || !strings.Contains(err.Error(), c.wantInError) {
				t.Fatalf("Check = %v, want a %s violation mentioning %q", err, c.rule, c.wantInError)
			}
		})
	}
}

// The linter reports the line of the offending form.
func TestLintNamesTheLine(t *testing.T) {
	p := Profile() + "\n(allow file-read*)\n"
	err := Lint(p, allParams)
	var ce LintError
	if !errors.As(err, &ce) || len(ce) != 1 || ce[0].Line != strings.Count(Profile(), "\n")+2 {
		t.Fatalf("Check = %#v, want one violation on the appended line %d", err, strings.Count(Profile(), "\n")+2)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
