package seatbelt

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"anet.dev/anet/pkg/sandbox"
)

// Violation is one way a profile breaks the rules Lint enforces.
type Violation struct {
	// Rule names the rule broken (the constants below).
	Rule string
	Line int
	// Form is the offending form as written (clipped), Why the reason.
	Form, Why string
}

func (v Violation) Error() string {
	return fmt.Sprintf("line %d: %s: %s: %s", v.Line, v.Rule, v.Form, v.Why)
}

// LintError lists every violation of a profile.
type LintError []Violation

func (e LintError) Error() string {
	parts := make([]string, len(e))
	for i, v := range e {
		parts[i] = v.Error()
	}
	return "seatbelt profile: " + strings.Join(parts, "; ")
}

// Rules of Lint.
const (
	RuleSyntax      = "syntax"       // parses as the SBPL subset, printable ASCII only
	RuleShape       = "shape"        // (version 1), then (deny default), then allow and deny forms only
	RuleParam       = "param"        // every (param "X") is supplied, and every supplied X is used
	RuleModifier    = "modifier"     // no (with …) but (with message "…"): never (with no-sandbox)
	RuleOperation   = "operation"    // allows name only operations reviewed for this profile
	RuleUnfiltered  = "unfiltered"   // an allow of a dangerous operation has a filter
	RuleFilter      = "filter"       // each filter of an allow is one this operation may take
	RuleBroadPath   = "broad-path"   // no allow opens "/", a home, the data volume or a shared temp dir
	RuleWrite       = "write"        // writes go to the run's own dirs (and a few devices) only
	RuleNetwork     = "network"      // outbound only to localhost:<one port>; never (local ip …)
	RuleMachService = "mach-service" // only the reviewed system services, each by name
	RuleTTY         = "tty"          // a terminal only with the pty extension: the run's own
	RuleLink        = "link"         // hard links of files in the run's own dirs only
	RuleKeyDir      = "key-dir"      // nothing of OpenSSL's private key dirs is readable
	RuleIPC         = "ipc"          // named shared memory only by the reviewed names
)

// unfilteredOK are the operations an allow may give with no filter: none reaches a file, the
// network, another process or a system service.
var unfilteredOK = map[string]bool{"process-fork": true, "mach-host*": true, "ipc-posix-sem": true, "pseudo-tty": true}

// fileOps are the file operations an allow may give, each with path filters.
var fileOps = map[string]bool{
	"file-read*": true, "file-read-data": true, "file-read-metadata": true, "file-write*": true,
	"file-write-data": true, "file-ioctl": true, "file-map-executable": true, "process-exec": true,
	"file-link": true,
}

// ptyOps are the file operations the run's own terminals may be given.
var ptyOps = map[string]bool{
	"file-read*": true, "file-read-data": true, "file-read-metadata": true, "file-write*": true,
	"file-write-data": true, "file-ioctl": true,
}

// shmOps are the named shared memory operations an allow may give, each with a name filter;
// shmReadOps of them only read.
var (
	shmOps = map[string]bool{
		"ipc-posix-shm-read*": true, "ipc-posix-shm-read-data": true, "ipc-posix-shm-read-metadata": true,
		"ipc-posix-shm-write-create": true, "ipc-posix-shm-write-unlink": true,
	}
	shmReadOps = map[string]bool{"ipc-posix-shm-read*": true, "ipc-posix-shm-read-data": true, "ipc-posix-shm-read-metadata": true}
)

// reviewedShm are the shared memory segments a run may read, by name: notify(3)'s page of
// notification state, which the system writes and every process reads.
var reviewedShm = map[string]bool{"apple.shm.notification_center": true}

// kmpRegex is the one pattern of shared memory names a run may make and remove: libomp's
// registration, one per process, named by its pid.
const kmpRegex = `^/__KMP_REGISTERED_LIB_[0-9]+$`

// ptyExtension marks a terminal made through /dev/ptmx inside the sandbox.
const ptyExtension = "com.apple.sandbox.pty"

// keyDirs are OpenSSL's private key dirs under Homebrew's prefixes (<OPENSSLDIR>/private).
// Their siblings (openssl.cnf, cert.pem, certs) are public; they are not.
var keyDirs = []string{
	"/opt/homebrew/etc/openssl@3/private", "/opt/homebrew/etc/openssl@1.1/private", "/opt/homebrew/etc/openssl/private",
	"/usr/local/etc/openssl@3/private", "/usr/local/etc/openssl@1.1/private", "/usr/local/etc/openssl/private",
}

// keyDirName is any OpenSSL private dir by its name, wherever it is.
var keyDirName = regexp.MustCompile(`/openssl[^/]*/private(/|$)`)

// writeOps are the file operations that change something.
var writeOps = map[string]bool{"file-write*": true, "file-write-data": true}

// refusedOps are operations an allow must never give, with why.
var refusedOps = map[string]string{
	"default":                  "(allow default) opens everything the profile denies",
	"network*":                 "every network operation, inbound and bind included",
	"network-inbound":          "a run accepts no connection",
	"network-bind":             "a run listens on nothing: a bound loopback port is reachable by every local program",
	"user-preference-read":     "the operator's preferences (cfprefsd) can hold tokens",
	"user-preference-write":    "the operator's preferences (cfprefsd) are not the run's",
	"lsopen":                   "Launch Services starts programs outside the sandbox",
	"appleevent-send":          "Apple events drive programs outside the sandbox",
	"sysctl-write":             "kernel settings are not the run's",
	"mach-register":            "a run offers no service to the system",
	"process-exec*":            "process-exec* includes exec without the sandbox",
	"file*":                    "every file operation",
	"mach*":                    "every Mach operation",
	"process*":                 "every process operation",
	"ipc-posix*":               "every named semaphore and shared memory segment of the host",
	"ipc-posix-shm":            "every named shared memory segment of the host, other programs' included",
	"ipc-posix-shm*":           "every named shared memory segment of the host, other programs' included",
	"ipc-posix-shm-write-data": "writes into shared memory other programs read",
	"iokit*":                   "every IOKit operation",
	"system*":                  "every system operation",
}

// otherOps are the non-file operations an allow may give; their filters are checked by op.
var otherOps = map[string]bool{
	"process-fork": true, "signal": true, "process-info*": true, "network-outbound": true,
	"system-socket": true, "mach-lookup": true, "mach-host*": true, "ipc-posix-sem": true,
	"iokit-open": true, "sysctl-read": true, "pseudo-tty": true,
	"ipc-posix-shm-read*": true, "ipc-posix-shm-read-data": true, "ipc-posix-shm-read-metadata": true,
	"ipc-posix-shm-write-create": true, "ipc-posix-shm-write-unlink": true,
}

// reviewedMach are the system services a run may look up, each reviewed: what a run can ask
// of them is no more than its own user and group information, certificate trust,
// notifications and where its user's temp dirs are.
var reviewedMach = map[string]bool{
	"com.apple.system.opendirectoryd.libinfo":    true,
	"com.apple.system.opendirectoryd.membership": true,
	"com.apple.trustd.agent":                     true,
	"com.apple.system.notification_center":       true,
	"com.apple.bsd.dirhelper":                    true,
}

// refusedMach are services known to open something a run must not reach, with why.
var refusedMach = map[string]string{
	"com.apple.ocspd":                                "it fetches OCSP and CRL URLs outside the sandbox on the run's behalf, whichever URL a crafted certificate names",
	"com.apple.SecurityServer":                       "the keychain daemon hands out the operator's keychain items",
	"com.apple.securityd.xpc":                        "the keychain daemon hands out the operator's keychain items",
	"com.apple.cfprefsd.daemon":                      "preferences can hold tokens",
	"com.apple.cfprefsd.agent":                       "preferences can hold tokens",
	"com.apple.coreservices.launchservicesd":         "Launch Services starts programs outside the sandbox",
	"com.apple.coreservices.appleevents":             "Apple events drive programs outside the sandbox",
	"com.apple.CoreServices.coreservicesd":           "Launch Services starts programs outside the sandbox",
	"com.apple.pasteboard.1":                         "the operator's clipboard",
	"com.apple.dnssd.service":                        "name lookups are a way out (DNS)",
	"com.apple.mDNSResponder":                        "name lookups are a way out (DNS)",
	"com.apple.SystemConfiguration.configd":          "the host's network configuration",
	"com.apple.SystemConfiguration.DNSConfiguration": "the host's network configuration",
	"com.apple.tccd":                                 "privacy consent of the operator's apps",
}

// broadRoots may never be opened whole by an allow: each holds every user's or the whole
// data volume's files, or a temp dir other programs share.
var broadRoots = map[string]bool{
	"/": true, "/Users": true, "/System": true, "/private": true, "/private/var": true,
	"/private/var/folders": true, "/private/tmp": true, "/tmp": true, "/var": true,
	"/Volumes": true, "/Library": true, "/dev": true, "/usr": true, "/usr/local": true,
	"/opt": true, "/opt/homebrew": true, "/Applications": true, "/etc": true,
}

// writableConstants are the only fixed paths a write may name: devices every program uses.
var writableConstants = map[string]string{ // path → filter
	"/dev/null": "literal", "/dev/zero": "literal", "/dev/ptmx": "literal", "/dev/fd": "subpath",
}

// ttyRegex names the user's terminals; a rule may use it only beside the pty extension.
const ttyRegex = `^/dev/ttys[0-9]+$`

var (
	paramName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	portSpec  = regexp.MustCompile(`^([0-9]{1,5}|\$\{[A-Z][A-Z0-9_]*\})$`)
)

// Lint parses profile and checks it against the rules every profile of this node keeps;
// params are the names the argument builder supplies. It returns a LintError with every
// violation, or nil. It knows the profile language's subset and the operations this backend
// reviewed; anything else is refused rather than guessed at.
func Lint(profile string, params []string) error {
	forms, err := parse(profile)
	if err != nil {
		return LintError{{Rule: RuleSyntax, Form: "profile", Why: err.Error()}}
	}
	c := &linter{used: map[string]bool{}}
	c.shape(forms)
	for _, f := range forms {
		c.form(f)
	}
	supplied := map[string]bool{}
	for _, p := range params {
		supplied[p] = true
		if !c.used[p] {
			c.fail(RuleParam, &node{kind: nodeSymbol, text: p}, "supplied but not used by the profile (a parameter nothing checks)")
		}
	}
	var names []string
	for p := range c.used {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		if !supplied[p] {
			c.fail(RuleParam, &node{kind: nodeSymbol, text: p}, "used by the profile but not supplied")
		}
	}
	if len(c.errs) > 0 {
		return c.errs
	}
	return nil
}

type linter struct {
	errs LintError
	used map[string]bool
}

func (c *linter) fail(rule string, n *node, why string) {
	c.errs = append(c.errs, Violation{Rule: rule, Line: n.line, Form: clip(n.String()), Why: why})
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// shape: (version 1) first, (deny default) second, then allows and denies.
func (c *linter) shape(forms []*node) {
	if len(forms) < 2 {
		c.errs = append(c.errs, Violation{Rule: RuleShape, Form: "profile", Why: "want (version 1) and (deny default) at least"})
		return
	}
	if v := forms[0]; v.head() != "version" || len(v.kids) != 2 || v.kids[1].text != "1" {
		c.fail(RuleShape, v, "the profile must start with (version 1)")
	}
	d := forms[1]
	if d.head() != "deny" || len(d.kids) < 2 || d.kids[1].kind != nodeSymbol || d.kids[1].text != "default" || len(filtersOf(d)) > 0 {
		c.fail(RuleShape, d, "the second form must be (deny default): everything is denied unless allowed")
	}
	for i, f := range forms {
		switch h := f.head(); {
		case h == "version" && i == 0:
		case h == "allow" || h == "deny":
		default:
			c.fail(RuleShape, f, "only allow and deny forms may follow (no import, define or debug)")
		}
	}
}

// opsOf are the operation symbols of an allow or deny form.
func opsOf(f *node) []*node {
	var ops []*node
	for _, k := range f.kids[1:] {
		if k.kind != nodeSymbol {
			break
		}
		ops = append(ops, k)
	}
	return ops
}

// filtersOf are the filters of a form: the lists after its operations, modifiers excluded.
func filtersOf(f *node) []*node {
	var out []*node
	for _, k := range f.kids[1+len(opsOf(f)):] {
		if k.head() != "with" {
			out = append(out, k)
		}
	}
	return out
}

func (c *linter) form(f *node) {
	h := f.head()
	if h != "allow" && h != "deny" {
		return
	}
	ops := opsOf(f)
	if len(ops) == 0 {
		c.fail(RuleShape, f, "an allow or deny names at least one operation")
		return
	}
	for _, k := range f.kids[1+len(ops):] {
		switch {
		case k.head() == "with":
			if len(k.kids) != 3 || k.kids[1].text != "message" || k.kids[2].kind != nodeString {
				c.fail(RuleModifier, k, `only (with message "…") may modify a rule; (with no-sandbox) would run a program outside the sandbox`)
			}
		case k.kind != nodeList:
			c.fail(RuleShape, k, "operations come first, then filters (lists)")
		default:
			c.values(k, h == "allow")
		}
	}
	if h == "allow" {
		c.allow(f, ops, filtersOf(f))
	}
}

// values checks every value inside a filter and records the parameters it uses: a value is
// a string, (param "NAME") or (string-append value…). An allow may not build on the
// operator's home (OPERATOR_HOME exists for the closing denies).
func (c *linter) values(n *node, inAllow bool) {
	for _, k := range n.kids {
		switch k.head() {
		case "param":
			if len(k.kids) != 2 || k.kids[1].kind != nodeString || !paramName.MatchString(k.kids[1].text) {
				c.fail(RuleParam, k, `want (param "NAME") with NAME in capitals`)
				continue
			}
			c.used[k.kids[1].text] = true
			if inAllow && k.kids[1].text == ParamOperatorHome {
				c.fail(RuleBroadPath, n, "an allow must not open anything under the operator's home")
			}
		case "string-append":
			c.values(k, inAllow)
		default:
			if k.isList() {
				c.values(k, inAllow)
			}
		}
	}
}

// value renders a value: constants as they are, parameters as ${NAME}; ok is false for
// anything but a string, a parameter or a string-append of those.
func value(n *node) (string, bool) {
	switch {
	case n.kind == nodeString:
		return n.text, true
	case n.head() == "param" && len(n.kids) == 2 && n.kids[1].kind == nodeString:
		return "${" + n.kids[1].text + "}", true
	case n.head() == "string-append":
		var b strings.Builder
		for _, k := range n.kids[1:] {
			s, ok := value(k)
			if !ok {
				return "", false
			}
			b.WriteString(s)
		}
		return b.String(), true
	}
	return "", false
}

func (c *linter) allow(f *node, ops, filters []*node) {
	for _, op := range ops {
		name := op.text
		if why, bad := refusedOps[name]; bad {
			c.fail(RuleOperation, f, "(allow "+name+"): "+why)
			continue
		}
		if !fileOps[name] && !otherOps[name] {
			c.fail(RuleOperation, f, "operation "+name+" is not among those reviewed for a run")
			continue
		}
		if len(filters) == 0 {
			switch {
			case name == "mach-lookup":
				c.fail(RuleMachService, f, "(allow mach-lookup) without a global-name filter reaches every service of the system, the keychain's and Launch Services' included")
			case name == "file-link":
				c.fail(RuleLink, f, "(allow file-link) without a filter lets the run give any file it can name a second name in its own dirs")
			case shmOps[name]:
				c.fail(RuleIPC, f, "(allow "+name+") without a name filter reaches every shared memory segment of the host")
			case !unfilteredOK[name]:
				c.fail(RuleUnfiltered, f, "(allow "+name+") without a filter opens it everywhere")
			}
			continue
		}
		for _, flt := range filters {
			if fileOps[name] {
				c.pathFilter(f, name, flt)
			} else {
				c.otherFilter(f, name, flt)
			}
		}
	}
}

// isPtyFilter reports whether flt is the run's own terminals: (require-all (regex tty) (extension pty)),
// in either order, and nothing else.
func isPtyFilter(flt *node) bool {
	if flt.head() != "require-all" || len(flt.kids) != 3 {
		return false
	}
	var re, ext bool
	for _, k := range flt.kids[1:] {
		switch {
		case k.head() == "regex" && len(k.kids) == 2 && k.kids[1].kind == nodeRegex && k.kids[1].text == ttyRegex:
			re = true
		case k.head() == "extension" && len(k.kids) == 2 && k.kids[1].kind == nodeString && k.kids[1].text == ptyExtension:
			ext = true
		}
	}
	return re && ext
}

// isTerminal reports whether path names a terminal device: /dev/tty (the controlling
// terminal), /dev/ttys* and /dev/tty* (every terminal of the user), /dev/pty* (their
// masters).
func isTerminal(path string) bool {
	return strings.HasPrefix(path, "/dev/tty") || strings.HasPrefix(path, "/dev/pty")
}

// inKeyDir reports whether a filter of kind on path reaches an OpenSSL private key dir:
// a path in one, or a subpath holding one.
func inKeyDir(kind, path string) bool {
	if keyDirName.MatchString(path) {
		return true
	}
	for _, d := range keyDirs {
		if kind == "subpath" && sandbox.Within(d, path) || sandbox.Within(path, d) {
			return true
		}
	}
	return false
}

// pathFilter checks one filter of a file operation (or process-exec).
func (c *linter) pathFilter(f *node, op string, flt *node) {
	kind := flt.head()
	switch {
	case isPtyFilter(flt):
		if !ptyOps[op] {
			c.fail(RuleTTY, flt, "the run's own terminals are read, written and controlled, not "+op)
		}
		return
	case kind == "regex":
		if len(flt.kids) == 2 && flt.kids[1].kind == nodeRegex && (strings.Contains(flt.kids[1].text, "tty") || strings.Contains(flt.kids[1].text, "pty")) {
			c.fail(RuleTTY, flt, `a terminal regex without (extension "`+ptyExtension+`") matches every terminal of the user, the operator's included: only (require-all (regex #"`+ttyRegex+`") (extension "`+ptyExtension+`"))`)
			return
		}
		c.fail(RuleFilter, flt, "a file rule takes no regex but the run's own terminals' (with the pty extension)")
		return
	case kind != "subpath" && kind != "literal" && kind != "path-ancestors":
		c.fail(RuleFilter, flt, "a file rule takes subpath, literal or path-ancestors filters only (no prefix, require-* or other compound but the pty form)")
		return
	}
	if len(flt.kids) != 2 {
		c.fail(RuleFilter, flt, "one path per filter")
		return
	}
	path, ok := value(flt.kids[1])
	if !ok {
		c.fail(RuleFilter, flt, `a path is a string, (param "X") or (string-append …) of those`)
		return
	}
	isParam := strings.HasPrefix(path, "${")
	if kind == "path-ancestors" && op != "file-read-metadata" && (op != "file-read-data" || path != "${"+ParamWork+"}") {
		c.fail(RuleFilter, flt, "path-ancestors opens every dir above a path: metadata only, or the names in the dirs above the work dir (file-read-data)")
		return
	}
	if op == "file-link" {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "${"), "}")
		if !isParam || !writableParams[name] || kind != "subpath" {
			c.fail(RuleLink, flt, "hard links are made of files in the run's own home, tmp and work dir only: a link elsewhere gives an outside file a name the run can reach")
		}
		return
	}
	if !isParam {
		switch {
		case !strings.HasPrefix(path, "/"):
			c.fail(RuleFilter, flt, "a path is absolute")
			return
		case kind == "subpath" && (broadRoots[path] || strings.HasPrefix(path, "/System/Volumes") || strings.HasPrefix(path, "/Users/")):
			c.fail(RuleBroadPath, flt, "opens "+path+" whole: every user's files, the data volume again (a firmlink) or a shared temp dir")
			return
		case isTerminal(path):
			c.fail(RuleTTY, flt, path+`: a terminal is opened only with (extension "`+ptyExtension+`"), the run's own; /dev/tty and the others reach the operator's`)
			return
		case op != "file-read-metadata" && inKeyDir(kind, path):
			c.fail(RuleKeyDir, flt, path+": reaches an OpenSSL private key dir (openssl@3/private); open its public files one by one")
			return
		}
	}
	if op == "file-ioctl" && (isParam || !strings.HasPrefix(path, "/dev/")) {
		c.fail(RuleFilter, flt, "device control (ioctl) is for devices under /dev only")
		return
	}
	if writeOps[op] {
		if isParam {
			name := strings.TrimSuffix(strings.TrimPrefix(path, "${"), "}")
			if !writableParams[name] || kind != "subpath" {
				c.fail(RuleWrite, flt, "writes go to the run's own home, tmp and work dir only")
			}
			return
		}
		if writableConstants[path] != kind {
			c.fail(RuleWrite, flt, "writes go to the run's own dirs and /dev/null, /dev/zero, /dev/fd, /dev/ptmx only")
		}
	}
}

// otherFilter checks one filter of a non-file operation.
func (c *linter) otherFilter(f *node, op string, flt *node) {
	arg := func(i int) string {
		if len(flt.kids) > i {
			if s, ok := value(flt.kids[i]); ok {
				return s
			}
			return flt.kids[i].String()
		}
		return ""
	}
	switch op {
	case "network-outbound":
		c.outbound(flt)
	case "signal", "process-info*":
		if flt.head() != "target" || len(flt.kids) != 2 || (arg(1) != "same-sandbox" && arg(1) != "self") {
			c.fail(RuleFilter, flt, "signals and process information reach only (target same-sandbox) or (target self)")
		}
	case "system-socket":
		if flt.head() != "socket-domain" || len(flt.kids) != 2 || arg(1) != "AF_UNIX" {
			c.fail(RuleNetwork, flt, "a run may make unix sockets only (connecting them is a network-outbound rule)")
		}
	case "mach-lookup":
		if flt.head() != "global-name" || len(flt.kids) != 2 || flt.kids[1].kind != nodeString {
			c.fail(RuleMachService, flt, "services are named one by one, (global-name \"…\"): no prefix, regex or local name")
			return
		}
		name := flt.kids[1].text
		if why, bad := refusedMach[name]; bad {
			c.fail(RuleMachService, flt, name+": "+why)
		} else if !reviewedMach[name] {
			c.fail(RuleMachService, flt, name+" is not among the services reviewed for a run")
		}
	case "iokit-open":
		// One argument, as every filter here: what follows it (a (with no-sandbox), a second
		// class) would be read by Seatbelt and not by this linter.
		if flt.head() != "iokit-registry-entry-class" || len(flt.kids) != 2 || arg(1) != "RootDomainUserClient" {
			c.fail(RuleFilter, flt, "the only IOKit user client a run may open is RootDomainUserClient")
		}
	case "ipc-posix-shm-read*", "ipc-posix-shm-read-data", "ipc-posix-shm-read-metadata",
		"ipc-posix-shm-write-create", "ipc-posix-shm-write-unlink":
		c.shm(op, flt)
	case "sysctl-read":
		if (flt.head() != "sysctl-name" && flt.head() != "sysctl-name-prefix") || len(flt.kids) != 2 || !strings.Contains(arg(1), ".") {
			c.fail(RuleFilter, flt, "sysctls are named (sysctl-name \"a.b\") or by a prefix with a dot")
		}
	default:
		c.fail(RuleFilter, flt, op+" takes no filter here")
	}
}

// shm checks one filter of a named shared memory operation: a reviewed name to read, or
// libomp's registration pattern.
func (c *linter) shm(op string, flt *node) {
	switch {
	case flt.head() == "ipc-posix-name" && len(flt.kids) == 2 && flt.kids[1].kind == nodeString:
		name := flt.kids[1].text
		switch {
		case !reviewedShm[name]:
			c.fail(RuleIPC, flt, name+" is not among the shared memory segments reviewed for a run")
		case !shmReadOps[op]:
			c.fail(RuleIPC, flt, name+" is read only: "+op+" would change what other programs read")
		}
	case flt.head() == "ipc-posix-name-regex" && len(flt.kids) == 2 && flt.kids[1].kind == nodeRegex && flt.kids[1].text == kmpRegex:
	default:
		c.fail(RuleIPC, flt, `shared memory is named (ipc-posix-name "…") or by libomp's pattern #"`+kmpRegex+`" only: no prefix or other regex`)
	}
}

// outbound checks one filter of network-outbound: (remote ip "localhost:PORT") with a fixed
// or parameter port, nothing else.
func (c *linter) outbound(flt *node) {
	if flt.head() == "local" {
		c.fail(RuleNetwork, flt, "(local ip …) on an outbound rule matches the unbound source address of every connection: it opens the whole network")
		return
	}
	if flt.head() != "remote" || len(flt.kids) != 3 || flt.kids[1].text != "ip" {
		c.fail(RuleNetwork, flt, `outbound goes to (remote ip "localhost:PORT") only: no unix socket, tcp or udp rule`)
		return
	}
	addr, ok := value(flt.kids[2])
	host, port, _ := strings.Cut(addr, ":")
	switch {
	case !ok:
		c.fail(RuleNetwork, flt, "the address is a string or built from a parameter")
	case host != "localhost":
		c.fail(RuleNetwork, flt, "the host must be localhost: "+host+" reaches beyond the machine")
	case port == "*" || port == "":
		c.fail(RuleNetwork, flt, "one port only: localhost:* reaches every local service")
	case !portSpec.MatchString(port):
		c.fail(RuleNetwork, flt, "the port is a number or one parameter")
	}
}
