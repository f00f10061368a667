package seatbelt

import (
	"regexp"
	"strings"
	"testing"
)

// sameTree reports whether a and b are the same forms, lines aside.
func sameTree(a, b []*node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kind != b[i].kind || a[i].text != b[i].text || !sameTree(a[i].kids, b[i].kids) {
			return false
		}
	}
	return true
}

func printForms(forms []*node) string {
	parts := make([]string, len(forms))
	for i, f := range forms {
		parts[i] = f.String()
	}
	return strings.Join(parts, "\n")
}

// FuzzLint (M1, S2, S3): for any text and any supplied parameter names,
//   - parse either fails or prints a tree that parses back to the same tree, whose strings
//     and regexes hold no newline (neither may span lines);
//   - Check never panics and, when it accepts a profile, the tree holds none of the forms it
//     claims to refuse: accepted checks the tree again with the linter's own tables.
func FuzzLint(f *testing.F) {
	if err := Lint(Profile(), allParams); err != nil {
		f.Fatalf("Lint(profile.sb) = %v", err)
	}
	params := strings.Join(allParams, ",")
	f.Add(Profile(), params)
	for _, form := range []string{`(allow default)`, `(allow file-read*)`, `(allow network-outbound (remote ip "localhost:*"))`,
		`(allow network-outbound (local ip "*:*"))`, `(allow process-exec (literal "/bin/ps") (with no-sandbox))`,
		`(allow file-read* (subpath "/System"))`, `(allow mach-lookup (global-name "com.apple.SecurityServer"))`,
		`(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))`, `(allow file-write* (subpath (param "HOME")))`,
		`(allow file-read* (regex #"^/dev/ttys[0-9]+$"))`, `(allow sysctl-read (sysctl-name "kern.osrelease"))`,
		`(allow file-ioctl (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))`,
		`(allow process-exec (require-all (extension "com.apple.sandbox.pty") (regex #"^/dev/ttys[0-9]+$")))`,
		`(allow file-read* (literal "/dev/tty"))`, `(allow file-link (subpath (param "WORK_DIR")))`, `(allow file-link (subpath "/Users"))`,
		`(allow file-read* (subpath "/opt/homebrew/etc/openssl@3"))`, `(allow file-read* (literal "/usr/local/etc/openssl@3/private/k"))`,
		`(allow file-read-data (path-ancestors (param "WORK_DIR")))`, `(allow file-read-data (path-ancestors (param "HOME_DIR")))`,
		`(allow ipc-posix-shm-read* (ipc-posix-name "apple.shm.notification_center"))`,
		`(allow ipc-posix-shm-write-create (ipc-posix-name "apple.shm.notification_center"))`,
		`(allow ipc-posix-shm-write-unlink (ipc-posix-name-regex #"^/__KMP_REGISTERED_LIB_[0-9]+$"))`, `(allow mach-lookup)`,
		`(deny file-read* (subpath (param "OPERATOR_HOME")) (with message "x \" \\ y"))`, `#"a\"b" ; comment`} {
		f.Add(Profile()+"\n"+form+"\n", params)
		f.Add("(version 1)\n(deny default)\n"+form, "")
	}
	f.Fuzz(func(t *testing.T, src, paramList string) {
		var supplied []string
		if paramList != "" {
			supplied = strings.Split(paramList, ",")
		}
		forms, err := parse(src)
		if err == nil {
			printed := printForms(forms)
			again, err := parse(printed)
			if err != nil {
				t.Fatalf("parse(%q) printed %q, which does not parse: %v", src, printed, err)
			}
			if !sameTree(forms, again) {
				t.Fatalf("parse(%q) printed %q, which parses to another tree", src, printed)
			}
			if s := spansLines(forms); s != "" {
				t.Fatalf("parse(%q): %s holds a newline", src, s)
			}
		}
		if Lint(src, supplied) != nil {
			return
		}
		if err != nil {
			t.Fatalf("Check accepted %q, which does not parse: %v", src, err)
		}
		if why := accepted(forms, supplied); why != "" {
			t.Fatalf("Check accepted %q with params %q, but %s", src, supplied, why)
		}
	})
}

func spansLines(forms []*node) string {
	for _, n := range forms {
		if (n.kind == nodeString || n.kind == nodeRegex) && strings.Contains(n.text, "\n") {
			return n.String()
		}
		if s := spansLines(n.kids); s != "" {
			return s
		}
	}
	return ""
}

// keyDirPath is a path in an OpenSSL private dir, whichever OpenSSL's.
var keyDirPath = regexp.MustCompile(`/openssl[^/]*/private(/|$)`)

var portOnly = regexp.MustCompile(`^([0-9]{1,5}|\$\{[A-Z][A-Z0-9_]*\})$`)

// accepted says what an accepted profile holds that Check claims to refuse, or "": it reads
// the tree again with the linter's tables, form by form, rule by rule.
func accepted(forms []*node, supplied []string) string {
	if len(forms) < 2 || forms[0].String() != "(version 1)" {
		return "it does not start with (version 1)"
	}
	if d := forms[1]; d.head() != "deny" || len(d.kids) < 2 || d.kids[1].kind != nodeSymbol || d.kids[1].text != "default" || len(filtersOf(d)) > 0 {
		return "its second form is " + forms[1].String() + ", not (deny default)"
	}
	used := map[string]bool{}
	for _, f := range forms[1:] {
		h := f.head()
		if h != "allow" && h != "deny" {
			return "it holds " + clip(f.String())
		}
		var bad string
		walkNodes(f, func(n *node) {
			switch n.head() {
			case "with":
				if len(n.kids) != 3 || n.kids[1].String() != "message" || n.kids[2].kind != nodeString {
					bad = "it holds the modifier " + n.String()
				}
			case "param":
				if len(n.kids) == 2 && n.kids[1].kind == nodeString {
					used[n.kids[1].text] = true
					if h == "allow" && n.kids[1].text == ParamOperatorHome {
						bad = "an allow builds on the operator's home: " + clip(f.String())
					}
				}
			case "local":
				if h == "allow" {
					bad = "an allow names a local address: " + clip(f.String())
				}
			}
		})
		if bad != "" {
			return bad
		}
		if h == "allow" {
			if why := acceptedAllow(f); why != "" {
				return why + ": " + clip(f.String())
			}
		}
	}
	for _, p := range supplied {
		if !used[p] {
			return "the supplied " + p + " is not used"
		}
		delete(used, p)
	}
	for p := range used {
		return "it uses " + p + ", which is not supplied"
	}
	return ""
}

// holdsKeyDir reports whether the tree dir holds one of Homebrew's OpenSSL key dirs.
func holdsKeyDir(dir string) bool {
	for _, prefix := range []string{"/opt/homebrew", "/usr/local"} {
		for _, name := range []string{"openssl@3", "openssl@1.1", "openssl"} {
			if d := prefix + "/etc/" + name + "/private"; d == dir || strings.HasPrefix(d, dir+"/") {
				return true
			}
		}
	}
	return false
}

func walkNodes(n *node, fn func(*node)) {
	fn(n)
	for _, k := range n.kids {
		walkNodes(k, fn)
	}
}

func acceptedAllow(f *node) string {
	ops := opsOf(f)
	filters := filtersOf(f)
	for _, op := range ops {
		name := op.text
		if _, bad := refusedOps[name]; bad {
			return "it allows the refused " + name
		}
		if !fileOps[name] && !otherOps[name] {
			return "it allows the unreviewed " + name
		}
		if len(filters) == 0 && !unfilteredOK[name] {
			return "it allows " + name + " unfiltered"
		}
		for _, flt := range filters {
			if why := acceptedFilter(name, flt); why != "" {
				return why
			}
		}
	}
	return ""
}

// ptyForms are the two ways to write the run's own terminals.
var ptyForms = map[string]bool{
	`(require-all (regex #"` + ttyRegex + `") (extension "` + ptyExtension + `"))`: true,
	`(require-all (extension "` + ptyExtension + `") (regex #"` + ttyRegex + `"))`: true,
}

func acceptedFilter(op string, flt *node) string {
	if fileOps[op] {
		if flt.head() == "regex" {
			return "a bare regex " + flt.String()
		}
		if flt.head() == "require-all" {
			if !ptyForms[flt.String()] {
				return "a compound filter " + flt.String()
			}
			if op == "process-exec" || op == "file-map-executable" || op == "file-link" {
				return "the run's terminals given " + op
			}
			return ""
		}
		if len(flt.kids) != 2 {
			return "a path filter of " + flt.String()
		}
		path, ok := value(flt.kids[1])
		if !ok {
			return "a path that is no value"
		}
		param := strings.HasPrefix(path, "${")
		switch kind := flt.head(); {
		case kind != "subpath" && kind != "literal" && kind != "path-ancestors":
			return "a file filter " + kind
		case kind == "path-ancestors" && op != "file-read-metadata" && !(op == "file-read-data" && path == "${WORK_DIR}"):
			return "path-ancestors for " + op
		case op == "file-link" && (!param || kind != "subpath" || !writableParams[strings.Trim(path, "${}")]):
			return "a hard link of " + path
		case !param && (strings.HasPrefix(path, "/dev/tty") || strings.HasPrefix(path, "/dev/pty")):
			return "a terminal " + path
		case !param && op != "file-read-metadata" && keyDirPath.MatchString(path):
			return "an OpenSSL key dir " + path
		case !param && op != "file-read-metadata" && kind == "subpath" && holdsKeyDir(path):
			return "a tree holding an OpenSSL key dir " + path
		case !param && !strings.HasPrefix(path, "/"):
			return "a relative path " + path
		case !param && kind == "subpath" && (broadRoots[path] || strings.HasPrefix(path, "/Users/") || strings.HasPrefix(path, "/System/Volumes")):
			return "a broad root " + path
		case op == "file-ioctl" && (param || !strings.HasPrefix(path, "/dev/")):
			return "ioctl outside /dev"
		case writeOps[op] && param && (!writableParams[strings.Trim(path, "${}")] || kind != "subpath"):
			return "a write to " + path
		case writeOps[op] && !param && writableConstants[path] != kind:
			return "a write to " + path
		}
		return ""
	}
	switch op {
	case "network-outbound":
		if flt.head() != "remote" || len(flt.kids) != 3 || flt.kids[1].String() != "ip" {
			return "an outbound filter " + flt.String()
		}
		addr, ok := value(flt.kids[2])
		host, port, _ := strings.Cut(addr, ":")
		if !ok || host != "localhost" || !portOnly.MatchString(port) {
			return "an outbound address " + addr
		}
	case "mach-lookup":
		if flt.head() != "global-name" || len(flt.kids) != 2 || flt.kids[1].kind != nodeString || !reviewedMach[flt.kids[1].text] {
			return "a service " + flt.String()
		}
	case "signal", "process-info*":
		if s := flt.String(); s != "(target same-sandbox)" && s != "(target self)" && s != `(target "same-sandbox")` && s != `(target "self")` {
			return "a target " + s
		}
	case "system-socket":
		if s := flt.String(); s != "(socket-domain AF_UNIX)" && s != `(socket-domain "AF_UNIX")` {
			return "a socket domain " + s
		}
	case "iokit-open":
		if s := flt.String(); s != "(iokit-registry-entry-class RootDomainUserClient)" && s != `(iokit-registry-entry-class "RootDomainUserClient")` {
			return "an IOKit class " + s
		}
	case "ipc-posix-shm-read*", "ipc-posix-shm-read-data", "ipc-posix-shm-read-metadata", "ipc-posix-shm-write-create", "ipc-posix-shm-write-unlink":
		read := strings.HasPrefix(op, "ipc-posix-shm-read")
		if s := flt.String(); s != `(ipc-posix-name-regex #"`+kmpRegex+`")` && !(read && s == `(ipc-posix-name "apple.shm.notification_center")`) {
			return "a shared memory filter " + s + " for " + op
		}
	case "sysctl-read":
		if (flt.head() != "sysctl-name" && flt.head() != "sysctl-name-prefix") || len(flt.kids) != 2 {
			return "a sysctl filter " + flt.String()
		}
	default:
		return op + " with a filter"
	}
	return ""
}
