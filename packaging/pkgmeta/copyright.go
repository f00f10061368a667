package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Module is one body of code linked into the packaged binaries, with its licence files.
type Module struct {
	Path    string // module path, or "std" for the Go standard library
	Version string
	Dir     string // where its source (and licence files) are
}

// licenceFileRE names the files of a module that carry its licence and notices.
var licenceFileRE = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice)([-._].*)?$`)

// copyrightRE is a copyright line of a licence file (some are quoted with "> ").
var copyrightRE = regexp.MustCompile(`^[>\s]*Copyright\s+(?:\(c\)\s*|©\s*|\(C\)\s*)?([0-9].*)$`)

// Licence is a licence recognised in a licence file, with its short name in the Debian
// copyright format (copyright-format 1.0, "License specification").
type Licence struct {
	Name string
	// Marks are phrases that together identify the licence's text.
	Marks []string
}

// licences are recognised in this order; a text may carry several (gopkg.in/yaml.v3 is
// under MIT and Apache-2.0 by file). BSD-3-clause is told from BSD-2-clause by its clause
// on the use of names.
var licences = []Licence{
	{"Apache-2.0", []string{"Apache License", "Version 2.0"}},
	{"Expat", []string{"Permission is hereby granted, free of charge"}},
	{"BSD-3-clause", []string{"Redistribution and use in source and binary forms", "endorse or promote products"}},
	{"BSD-2-clause", []string{"Redistribution and use in source and binary forms"}},
	// github.com/hashicorp/yamux (the vm tier's link multiplexer).
	{"MPL-2.0", []string{"Mozilla Public License", "version 2.0"}},
}

// Identify returns the short names of the licences in a licence text, "" if none is known.
func Identify(text string) string {
	flat := strings.Join(strings.Fields(text), " ")
	var names []string
	for _, l := range licences {
		all := true
		for _, m := range l.Marks {
			all = all && strings.Contains(flat, m)
		}
		if all && !(l.Name == "BSD-2-clause" && slices.Contains(names, "BSD-3-clause")) {
			names = append(names, l.Name)
		}
	}
	return strings.Join(names, " and ")
}

// linkedModules lists the modules the release binaries link (the same build the package
// makes: no cgo), and the standard library, from the go command in dir.
func linkedModules(dir string) ([]Module, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", "./cmd/...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/...: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	seen := map[string]bool{}
	var mods []Module
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		mods = append(mods, Module{Path: f[0], Version: f[1], Dir: f[2]})
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	ver, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOVERSION: %w", err)
	}
	std := Module{Path: "std", Version: strings.TrimSpace(string(ver)), Dir: strings.TrimSpace(string(goroot))}
	return append([]Module{std}, mods...), nil
}

// licenceFiles returns a module's licence and notice files, main licence first.
func licenceFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && licenceFileRE.MatchString(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	// LICENSE before LICENSE-3RD-PARTY.md, and both before NOTICE: the first names the
	// module's licence.
	rank := func(p string) int {
		n := strings.ToLower(filepath.Base(p))
		if strings.HasPrefix(n, "notice") {
			return 1000 + len(n)
		}
		return len(n)
	}
	slices.SortFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	if len(files) == 0 {
		return nil, fmt.Errorf("no LICENSE, COPYING or NOTICE file in %s", dir)
	}
	return files, nil
}

// copyrightLines are the distinct copyright statements of some texts, in order.
func copyrightLines(texts ...string) []string {
	var lines []string
	for _, t := range texts {
		sc := bufio.NewScanner(strings.NewReader(t))
		for sc.Scan() {
			if m := copyrightRE.FindStringSubmatch(sc.Text()); m != nil {
				l := strings.TrimSpace(m[1])
				if !slices.Contains(lines, l) {
					lines = append(lines, l)
				}
			}
		}
	}
	return lines
}

// field formats a multi-line field value: continuation lines start with a space, and an
// empty line is " ." (deb-control(5)).
func field(name, first string, body []string) string {
	var b strings.Builder
	b.WriteString(name + ": " + first + "\n")
	for _, l := range body {
		l = strings.TrimRight(strings.ReplaceAll(l, "\t", "        "), " ")
		if l == "" {
			l = "."
		}
		b.WriteString(" " + l + "\n")
	}
	return b.String()
}

// commonLicence is where Debian systems keep the full text of licences every system has
// (base-files); the copyright file refers there instead of repeating them.
var commonLicence = map[string]string{"Apache-2.0": "/usr/share/common-licenses/Apache-2.0"}

// Copyright is the package's machine-readable copyright file (copyright-format 1.0): the
// project under the licence of its LICENSE file, with NOTICE's copyright; then every module
// linked into the binaries (they are static, so their notices travel with the package), each
// with its licence files in full.
func Copyright(root string, mods []Module, upstreamContact, source string) (string, error) {
	licence, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		return "", fmt.Errorf("copyright: %w", err)
	}
	name := Identify(string(licence))
	if name == "" || strings.Contains(name, " and ") {
		return "", fmt.Errorf("copyright: LICENSE is not one licence this generator knows (got %q)", name)
	}
	notice, err := os.ReadFile(filepath.Join(root, "NOTICE"))
	if err != nil {
		return "", fmt.Errorf("copyright: %w", err)
	}
	own := copyrightLines(string(notice), string(licence))
	if len(own) == 0 {
		return "", fmt.Errorf("copyright: no Copyright line in NOTICE or LICENSE")
	}
	var b strings.Builder
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: anet\n")
	b.WriteString("Upstream-Contact: " + upstreamContact + "\n")
	b.WriteString("Source: " + source + "\n")
	b.WriteString("Comment: The binaries are built without cgo and link the Go modules listed\n" +
		" below statically; each paragraph after the first names one of them, with its\n" +
		" licence files in full.\n\n")
	b.WriteString("Files: *\n")
	b.WriteString(field("Copyright", own[0], own[1:]))
	b.WriteString(licenceField(name, string(licence)))
	for _, m := range mods {
		files, err := licenceFiles(m.Dir)
		if err != nil {
			return "", fmt.Errorf("copyright: module %s: %w", m.Path, err)
		}
		var texts []string
		for _, f := range files {
			t, err := os.ReadFile(f)
			if err != nil {
				return "", fmt.Errorf("copyright: module %s: %w", m.Path, err)
			}
			texts = append(texts, string(t))
		}
		ln := Identify(texts[0])
		if ln == "" {
			return "", fmt.Errorf("copyright: module %s: %s is no licence this generator knows; read it and add it to licences", m.Path, files[0])
		}
		cr := copyrightLines(texts...)
		if len(cr) == 0 {
			cr = []string{"the " + m.Path + " authors"}
		}
		b.WriteString("\nFiles: " + m.Path + "/*\n")
		b.WriteString(field("Copyright", cr[0], cr[1:]))
		b.WriteString(licenceField(ln, texts...))
		if m.Path == "std" {
			b.WriteString("Comment: The Go standard library, " + m.Version + ".\n")
		} else {
			b.WriteString("Comment: Go module " + m.Path + " " + m.Version + ".\n")
		}
	}
	return b.String(), nil
}

// licenceField is a License field: the short name, then the texts, except for a licence
// every Debian system has, which is referred to.
func licenceField(name string, texts ...string) string {
	if p, ok := commonLicence[name]; ok && len(texts) == 1 {
		return field("License", name, []string{"On Debian systems the full text of the " + name + " licence is in", p + "."})
	}
	var body []string
	for i, t := range texts {
		if i > 0 {
			body = append(body, "", "----", "")
		}
		if p, ok := commonLicence[Identify(t)]; ok {
			body = append(body, "On Debian systems the full text of this licence is in "+p+".")
			body = append(body, copyrightBlock(t)...)
			continue
		}
		t = fullApacheRE.ReplaceAllString(t, "\n\n[The Apache License 2.0 in full: on Debian systems in "+commonLicence["Apache-2.0"]+".]")
		body = append(body, strings.Split(strings.TrimSpace(t), "\n")...)
	}
	return field("License", name, body)
}

// fullApacheRE is a whole copy of the Apache License 2.0 inside another notice file (one
// module's third-party file quotes it): it is replaced by a reference, as for the module's
// own Apache-2.0 licence.
var fullApacheRE = regexp.MustCompile(`(?s)\s*Apache License\s+Version 2\.0, January 2004.*?END OF TERMS AND CONDITIONS`)

// copyrightBlock keeps what a referred-to licence file adds to the common text: its
// copyright lines (NOTICE files are kept whole, being short and the licence's own demand).
func copyrightBlock(t string) []string {
	var out []string
	for _, l := range copyrightLines(t) {
		out = append(out, "Copyright "+l)
	}
	return out
}
