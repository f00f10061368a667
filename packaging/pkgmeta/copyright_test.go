package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIdentify: the licences the copyright file names are told apart by their texts.
func TestIdentify(t *testing.T) {
	root := filepath.Join("..", "..")
	apache, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"the project's LICENSE", string(apache), "Apache-2.0"},
		{"MIT", "Permission is hereby granted, free of charge, to any person", "Expat"},
		{"BSD-3", "Redistribution and use in source and binary forms ... may be used to\n endorse or promote products", "BSD-3-clause"},
		{"BSD-2", "Redistribution and use in source and binary forms, with or without", "BSD-2-clause"},
		{"MIT and Apache", "Apache License\nVersion 2.0\nPermission is hereby granted, free of charge", "Apache-2.0 and Expat"},
		{"unknown", "All rights reserved.", ""},
	} {
		if got := Identify(tc.text); got != tc.want {
			t.Errorf("Identify(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCopyright (C4): the copyright file names the project's licence and every module the
// release binaries link, each with a licence and a copyright, and refers to the common
// Apache-2.0 text instead of repeating it (lintian's copyright-file-contains-full-apache-2-
// license).
func TestCopyright(t *testing.T) {
	root := filepath.Join("..", "..")
	mods, err := linkedModules(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Copyright(root, mods, maintainer, homepage)
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(c, "\n\n")
	if !strings.HasPrefix(paras[0], "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") {
		t.Errorf("header paragraph = %q", paras[0])
	}
	if !strings.Contains(c, "Files: *\nCopyright: 2026 The ANet Authors\nLicense: Apache-2.0\n") {
		t.Errorf("no Files: * paragraph for the project under Apache-2.0")
	}
	for _, m := range mods {
		i := strings.Index(c, "\nFiles: "+m.Path+"/*\nCopyright: ")
		if i < 0 {
			t.Errorf("module %s has no paragraph", m.Path)
			continue
		}
		if !strings.Contains(c[i:], "\nLicense: ") {
			t.Errorf("module %s has no License field", m.Path)
		}
	}
	if strings.Contains(c, "TERMS AND CONDITIONS FOR USE, REPRODUCTION") {
		t.Error("the copyright file repeats the Apache License in full")
	}
	for _, l := range strings.Split(c, "\n") {
		if strings.TrimSpace(l) == "" && l != "" {
			t.Fatalf("a whitespace-only line breaks the paragraph structure: %q", l)
		}
	}
}
