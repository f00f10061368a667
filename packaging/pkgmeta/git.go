package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// gitOut runs git in dir and returns its trimmed standard output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// readTree asks git about the tree in dir.
func readTree(dir string) (Tree, error) {
	var t Tree
	// No reachable release tag is not an error: the tree is then a pre-release of 0.0.0.
	t.Describe, _ = gitOut(dir, "describe", "--tags", "--long", "--match", "v[0-9]*", "--abbrev=12")
	count, err := gitOut(dir, "rev-list", "--count", "HEAD")
	if err != nil {
		return t, err
	}
	if t.Commits, err = strconv.Atoi(count); err != nil {
		return t, fmt.Errorf("git rev-list --count: %q: %w", count, err)
	}
	if t.Hash, err = gitOut(dir, "rev-parse", "--short=12", "HEAD"); err != nil {
		return t, err
	}
	status, err := gitOut(dir, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return t, err
	}
	t.Dirty = status != ""
	return t, nil
}

// commitTime is the committer time of HEAD: the changelog's date, so that two builds of one
// commit make the same package.
func commitTime(dir string) (time.Time, error) {
	s, err := gitOut(dir, "log", "-1", "--format=%ct")
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("git log --format=%%ct: %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
