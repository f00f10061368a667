package seatbelt

import (
	"errors"
	"strings"
	"testing"
)

// allParams are the names Argv supplies.
var allParams = []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamDeveloperDir, ParamSelf, ParamEndpointPort, ParamOperatorHome}

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
		{"every service", RuleMachService, `(allow mach-lookup)`},
		{"every service, a message its only modifier", RuleMachService, `(allow mach-lookup (with message "x"))`},
		{"membership by a prefix", RuleMachService, `(allow mach-lookup (global-name-prefix "com.apple.system.opendirectoryd."))`},
		// Terminals: only the run's own, marked with the pty extension (M1).
		{"every terminal (the old unconditional rule)", RuleTTY, `(allow file-read* file-write* file-ioctl (regex #"^/dev/ttys[0-9]+$"))`},
		{"ioctl on every terminal", RuleTTY, `(allow file-ioctl (regex #"^/dev/ttys[0-9]+"))`},
		{"write data to every terminal", RuleTTY, `(allow file-write-data (regex #"^/dev/tty"))`},
		{"one terminal by name", RuleTTY, `(allow file-read* file-write* (literal "/dev/ttys003"))`},
		{"the controlling terminal", RuleTTY, `(allow file-read* file-write* (literal "/dev/tty"))`},
		{"a pty master", RuleTTY, `(allow file-read* (literal "/dev/ptyp0"))`},
		{"the run's terminals run as programs", RuleTTY, `(allow process-exec (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))`},
		{"terminals by another extension", RuleFilter, `(allow file-read* (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.app-sandbox.read-write")))`},
		{"a third filter in the pty form", RuleFilter, `(allow file-read* (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty") (literal "/x")))`},
		// Outbound: the host is localhost, by that name (M1, S2).
		{"outbound to the loopback by number", RuleNetwork, `(allow network-outbound (remote ip "127.0.0.1:49733"))`},
		{"outbound to a host beyond", RuleNetwork, `(allow network-outbound (remote ip "1.1.1.1:443"))`},
		{"outbound to every host on the endpoint's port", RuleNetwork, `(allow network-outbound (remote ip (string-append "*:" (param "ENDPOINT_PORT"))))`},
		// Hard links: of the run's own files only (M1, S3).
		{"hard links of every file", RuleLink, `(allow file-link)`},
		{"hard links of the operator's files", RuleLink, `(allow file-link (subpath "/Users/op/Documents"))`},
		{"hard links of the shared tmp", RuleLink, `(allow file-link (subpath "/private/tmp"))`},
		{"hard links of the agent", RuleLink, `(allow file-link (subpath (param "AGENT_TREE")))`},
		{"hard links of the work dir alone", RuleLink, `(allow file-link (literal (param "WORK_DIR")))`},
		// OpenSSL's key dirs (M1, F3).
		{"Homebrew OpenSSL's keys", RuleKeyDir, `(allow file-read* (subpath "/opt/homebrew/etc/openssl@3/private"))`},
		{"one key", RuleKeyDir, `(allow file-read-data (literal "/usr/local/etc/openssl@3/private/server.key"))`},
		{"the key dir's names", RuleKeyDir, `(allow file-read* (literal "/opt/homebrew/etc/openssl@3/private"))`},
		{"OpenSSL's whole dir", RuleKeyDir, `(allow file-read* (subpath "/opt/homebrew/etc/openssl@3"))`},
		{"Homebrew's whole etc", RuleKeyDir, `(allow file-read* (subpath "/usr/local/etc"))`},
		{"an older OpenSSL's keys", RuleKeyDir, `(allow file-read* (subpath "/usr/local/etc/openssl@1.1/private"))`},
		{"another package manager's keys", RuleKeyDir, `(allow file-read* (subpath "/opt/local/etc/openssl/private"))`},
		{"keys mapped executable", RuleKeyDir, `(allow file-map-executable (subpath "/opt/homebrew/etc/openssl@3/private"))`},
		// Named shared memory (M1).
		{"every segment", RuleOperation, `(allow ipc-posix-shm)`},
		{"every segment by wildcard", RuleOperation, `(allow ipc-posix-shm* (ipc-posix-name "apple.shm.notification_center"))`},
		{"reads of every segment", RuleIPC, `(allow ipc-posix-shm-read-data)`},
		{"an unreviewed segment", RuleIPC, `(allow ipc-posix-shm-read* (ipc-posix-name "apple.cfprefs.501"))`},
		{"segments by prefix", RuleIPC, `(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))`},
		{"the notification page made anew", RuleIPC, `(allow ipc-posix-shm-write-create (ipc-posix-name "apple.shm.notification_center"))`},
		{"the notification page removed", RuleIPC, `(allow ipc-posix-shm-write-unlink (ipc-posix-name "apple.shm.notification_center"))`},
		{"a wider libomp pattern", RuleIPC, `(allow ipc-posix-shm-write-create (ipc-posix-name-regex #"^/__KMP_"))`},
		{"writes into segments", RuleOperation, `(allow ipc-posix-shm-write-data (ipc-posix-name-regex #"^/__KMP_REGISTERED_LIB_[0-9]+$"))`},
		// The developer dir and the dirs above the work dir are read, never written.
		{"write the developer dir", RuleWrite, `(allow file-write* (subpath (param "DEVELOPER_DIR")))`},
		{"names above the agent", RuleFilter, `(allow file-read-data (path-ancestors (param "AGENT_TREE")))`},
		{"everything in the dirs above the work dir", RuleFilter, `(allow file-read* (path-ancestors (param "WORK_DIR")))`},
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
		{"a parameter not supplied", RuleParam, "", "", []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamDeveloperDir, ParamSelf, ParamOperatorHome}, ParamEndpointPort},
		{"the developer dir not supplied", RuleParam, "", "", []string{ParamHome, ParamTmp, ParamWork, ParamAgentTree, ParamSelf, ParamEndpointPort, ParamOperatorHome}, ParamDeveloperDir},
		{"the pty extension dropped", RuleTTY, "(require-all\n    (regex #\"^/dev/ttys[0-9]+$\")\n    (extension \"com.apple.sandbox.pty\"))", `(regex #"^/dev/ttys[0-9]+$")`, nil, "/dev/ttys"},
		{"a key dir opened beside the public files", RuleKeyDir, `(subpath "/opt/homebrew/etc/openssl@3/certs")`, `(subpath "/opt/homebrew/etc/openssl@3/private")`, nil, "openssl@3/private"},
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
