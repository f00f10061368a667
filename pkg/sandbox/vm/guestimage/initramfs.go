package guestimage

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// The initramfs is a newc cpio archive (newc.go).

// Paths inside the initramfs.
const (
	InitPath   = "/init"
	ModuleDir  = "/modules"
	ModuleList = "/modules/order"
	// AgentRoot is where the guest init assembles the agent's root (a tmpfs).
	AgentRoot = "/a"
)

// initramfsFormat changes when the layout below does, so old cached images are not reused.
const initramfsFormat = "anet-initramfs-1"

// BuildInitramfs returns the cached initramfs for the guest init binary initBin and kernel k,
// writing it into cacheDir first when missing. The archive holds the init binary (with its
// ELF interpreter and libraries when it is dynamically linked), the modules in load order,
// /dev/console and the empty mount points.
func BuildInitramfs(initBin string, k Kernel, cacheDir string) (string, error) {
	libs, err := elfClosure(initBin)
	if err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	h := sha256.New()
	io.WriteString(h, initramfsFormat+"\x00"+k.Key+"\x00")
	for _, p := range append([]string{initBin}, sortedValues(libs)...) {
		if err := hashFile(h, p); err != nil {
			return "", fmt.Errorf("initramfs: %w", err)
		}
	}
	out := filepath.Join(cacheDir, "initramfs-"+hex.EncodeToString(h.Sum(nil))[:16]+".cpio")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(cacheDir, 0o700); err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	tmp, err := os.CreateTemp(cacheDir, ".initramfs-")
	if err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeInitramfs(tmp, initBin, libs, k); err != nil {
		tmp.Close()
		return "", fmt.Errorf("initramfs: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	return out, nil
}

func writeInitramfs(w io.Writer, initBin string, libs map[string]string, k Kernel) error {
	type file struct {
		name, src string
		data      []byte
		perm      uint32
	}
	files := []file{{name: InitPath, src: initBin, perm: 0o755}}
	for guest, host := range libs {
		files = append(files, file{name: guest, src: host, perm: 0o755})
	}
	var order strings.Builder
	for _, m := range k.ModulePaths() {
		files = append(files, file{name: path.Join(ModuleDir, filepath.Base(m)), src: m, perm: 0o600})
		order.WriteString(filepath.Base(m) + "\n")
	}
	files = append(files, file{name: ModuleList, data: []byte(order.String()), perm: 0o600})
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })

	dirs := map[string]bool{"dev": true, "proc": true, "sys": true, "run": true, "tmp": true, strings.TrimPrefix(AgentRoot, "/"): true}
	for _, f := range files {
		for d := path.Dir(strings.TrimPrefix(f.name, "/")); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var entries []newcEntry
	for _, d := range sortedKeys(dirs) { // a parent sorts before its children
		entries = append(entries, newcEntry{name: d, mode: newcIFDIR | 0o755})
	}
	// The kernel opens /dev/console for init's stdio; without the node init has none.
	entries = append(entries, newcEntry{name: "dev/console", mode: newcIFCHR | 0o600, rmajor: 5, rminor: 1})
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	for _, f := range files {
		name := strings.TrimPrefix(f.name, "/")
		if f.src == "" {
			entries = append(entries, newcEntry{name: name, mode: newcIFREG | f.perm, size: int64(len(f.data)), data: bytes.NewReader(f.data)})
			continue
		}
		fh, err := os.Open(f.src)
		if err != nil {
			return err
		}
		open = append(open, fh)
		fi, err := fh.Stat()
		if err != nil {
			return err
		}
		entries = append(entries, newcEntry{name: name, mode: newcIFREG | f.perm, size: fi.Size(), data: fh})
	}
	return writeNewc(w, entries)
}

// libDirs are searched for DT_NEEDED libraries, as the dynamic loader's default path does on
// Debian (multiarch first).
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// elfClosure maps the guest paths of bin's ELF interpreter and every library it needs
// (transitively) to the host files that hold them. A static binary needs none.
func elfClosure(bin string) (map[string]string, error) {
	out := map[string]string{}
	var visit func(p string) error
	visit = func(p string) error {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return fmt.Errorf("%s: interpreter: %w", p, err)
			}
			interp := strings.TrimRight(string(b), "\x00")
			if _, ok := out[interp]; !ok {
				real, err := filepath.EvalSymlinks(interp)
				if err != nil {
					return fmt.Errorf("%s: interpreter %s: %w", p, interp, err)
				}
				out[interp] = real
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, lib := range needed {
			if _, ok := out[lib]; ok {
				continue
			}
			found := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
					found = filepath.Join(d, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s: library %s not found in %v", p, lib, libDirs)
			}
			real, err := filepath.EvalSymlinks(found)
			if err != nil {
				return err
			}
			out[found] = real
			out[lib] = "" // visited marker, removed below
			if err := visit(real); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(bin); err != nil {
		return nil, err
	}
	for k, v := range out {
		if v == "" {
			delete(out, k)
		}
	}
	return out, nil
}

func hashFile(h io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
