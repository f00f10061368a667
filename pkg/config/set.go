package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set changes one key of the configuration file at path (`anet config set KEY VALUE`). See
// SetWith.
func Set(path, key, value string) error { return SetWith(path, key, value, nil) }

// SetWith sets the scalar at a dotted key path (for egress_allow a comma-separated list, ""
// for the empty list), creating mappings as needed. The file is created 0600 (its directory
// 0700) if missing. The operator's comments and key order are kept: the value is replaced in
// the text itself when it can be, else the YAML tree is re-encoded (comments kept, layout
// normalised). The whole resulting document is validated with Parse, then by check when not
// nil (for example Paths.CheckWorkRoots); only then is the file replaced, atomically. On any
// error the file is untouched.
func SetWith(path, key, value string, check func(Config) error) error {
	f, err := lookup(key)
	if err != nil {
		return fmt.Errorf("config set: %w", err)
	}
	if f.children != nil {
		return fmt.Errorf("config set %s: this is a section; set one of its keys (known: %s)", key, f.known())
	}
	if hasControl(value) {
		return fmt.Errorf("config set %s: the value must be one line without control characters", key)
	}
	if err := integerValue(f, value); err != nil {
		return fmt.Errorf("config set %s: %w", key, err)
	}
	val, err := valueNode(f, value)
	if err != nil {
		return fmt.Errorf("config set %s: %w", key, err)
	}
	target := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		target = r // replace the file a symlinked config points to, not the link
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("config set: create config dir: %w", err)
	}
	// Two `anet config set` at once must not both read the old file and each write it with
	// only their own change: the read, the edit and the write happen under one exclusive lock
	// (whether anetd runs or not), and the write lands only if the file still holds the bytes
	// the edit was made to (an editor that does not take the lock).
	unlock, err := lockFile(lockPath(target))
	if err != nil {
		return fmt.Errorf("config set %s: %w", key, err)
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		err := setOnce(path, target, key, val, check)
		if errors.Is(err, errChanged) && attempt < maxSetAttempts {
			continue
		}
		return err
	}
}

// maxSetAttempts bounds how often a set is redone when the file changes under it.
const maxSetAttempts = 3

// errChanged means the file changed between the read and the write; nothing was written.
var errChanged = errors.New("the file changed while it was being edited; nothing was written, run the command again")

// lockPath is the lock file beside the config: a dot file in the same directory, so that
// whoever may replace the config may take its lock.
func lockPath(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".lock")
}

func setOnce(path, target, key string, val *yaml.Node, check func(Config) error) error {
	src, fi, err := readForSet(target)
	if err != nil {
		return err
	}
	if afterRead != nil {
		afterRead(target)
	}
	out, err := edit(path, src, strings.Split(key, "."), val)
	if err != nil {
		return err
	}
	if check != nil {
		c, err := Parse(path, out)
		if err != nil {
			return err
		}
		if err := check(c); err != nil {
			return err
		}
	}
	if err := writeAtomic(target, out, src, fi); err != nil {
		return fmt.Errorf("config set %s: %w", key, err)
	}
	// Report only a write that landed: what is in the file now is what was written.
	got, err := os.ReadFile(target)
	if err != nil {
		return fmt.Errorf("config set %s: read back %s: %w", key, target, err)
	}
	if !bytes.Equal(got, out) {
		return fmt.Errorf("config set %s: %s was replaced by another writer right after this one; check it with `anet config get %s`", key, target, key)
	}
	return nil
}

// afterRead, when set by a test, runs between reading the file and replacing it.
var afterRead func(target string)

func valueNode(f *field, value string) (*yaml.Node, error) {
	if !f.list {
		return scalarNode(f, value), nil
	}
	var items []string
	if value != "" {
		for i, it := range strings.Split(value, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				return nil, fmt.Errorf("entry %d of the comma-separated list is empty", i+1)
			}
			items = append(items, it)
		}
	}
	return listNode(items, 0), nil
}

// readForSet reads the file to edit; fi is nil when there is none yet (it is created 0600).
func readForSet(path string) ([]byte, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("config set: %w", err)
	}
	if err := CheckFileInfo(path, fi); err != nil {
		return nil, nil, err
	}
	if fi.Size() > maxFileSize {
		return nil, nil, fmt.Errorf("config set: %s is larger than %d bytes", path, maxFileSize)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config set: %w", err)
	}
	return src, fi, nil
}

// unchanged reports whether path still holds was (nil: still absent): the compare of the
// compare-and-swap, made under the lock just before the rename.
func unchanged(path string, was []byte, wasThere bool) (bool, error) {
	now, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return !wasThere, nil
	}
	if err != nil {
		return false, err
	}
	return wasThere && bytes.Equal(now, was), nil
}

// edit returns the new file content with path set to val, validated by Parse. It prefers the
// text splice (byte-identical outside the value) and uses it only when it parses to the same
// Config as the re-encoded tree, so a splice that misreads the layout can never be written.
func edit(name string, src []byte, path []string, val *yaml.Node) ([]byte, error) {
	root, err := parseDocument(name, src)
	if err != nil {
		return nil, err
	}
	step := indentStep(root)
	spliced := splice(src, root, path, val, step)

	var doc yaml.Node
	if root == nil {
		root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	} else if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, syntaxError(name, src, err)
	} else {
		root = doc.Content[0]
	}
	setPath(root, path, val)
	ref, err := renderIndent(&doc, step)
	if err != nil {
		return nil, err
	}
	refCfg, refErr := Parse(name, ref)
	if spliced != nil {
		spCfg, spErr := Parse(name, spliced)
		switch {
		case spErr == nil && refErr == nil && reflect.DeepEqual(spCfg, refCfg):
			return spliced, nil
		case spErr != nil && refErr != nil:
			return nil, spErr // its line numbers are the operator's
		}
	}
	if refErr != nil {
		return nil, refErr
	}
	return ref, nil
}

// setPath sets val at path in the mapping m, creating mappings and replacing empty values.
// A replaced value node keeps its comments.
func setPath(m *yaml.Node, path []string, val *yaml.Node) {
	for i, seg := range path {
		var v *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == seg {
				v = m.Content[j+1]
				break
			}
		}
		last := i == len(path)-1
		if v == nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if last {
				v = val
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}, v)
		} else if last || v.Kind != yaml.MappingNode {
			repl := val
			if !last {
				repl = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			if last && v.Kind == yaml.SequenceNode && repl.Kind == yaml.SequenceNode {
				repl.Style = v.Style
			}
			repl.HeadComment, repl.LineComment, repl.FootComment = v.HeadComment, v.LineComment, v.FootComment
			*v = *repl
		}
		m = v
	}
}

// indentStep guesses the file's indentation from its first nested block mapping.
func indentStep(root *yaml.Node) int {
	if root == nil {
		return 2
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - k.Column; d >= 2 && d <= 8 {
				return d
			}
		}
	}
	return 2
}

func renderIndent(doc *yaml.Node, step int) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(step)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return b.Bytes(), nil
}

// writeAtomic replaces path with data: a temporary file in the same directory with the old
// file's mode and owner (0600 for a new file), fsync, rename, fsync of the directory, so a
// crash leaves the old file or the new one, never a mix. It writes nothing (errChanged) when
// path no longer holds old, the bytes the edit was made to (old is nil and fi nil when there
// was no file).
func writeAtomic(path string, data, old []byte, fi fs.FileInfo) (err error) {
	perm := fs.FileMode(0o600)
	if fi != nil {
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if fi != nil {
		if err = keepOwner(tmp, fi); err != nil {
			return fmt.Errorf("write %s: keep owner: %w", path, err)
		}
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	same, err := unchanged(path, old, fi != nil)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !same {
		err = errChanged
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync dir: %w", path, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("write %s: sync dir: %w", path, err)
	}
	return nil
}
