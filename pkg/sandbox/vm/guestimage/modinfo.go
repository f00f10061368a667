package guestimage

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// guestModules are the modules the guest loads (their dependencies come along): the
// virtio-mmio transport of microvm, the virtio-serial link, the 9p shares and the vsock link.
var guestModules = []string{"virtio_mmio", "virtio_console", "9pnet_virtio", "9p", "vmw_vsock_virtio_transport"}

// moduleDepends reads the depends= entry of a module's .modinfo section: the kernel build
// records there exactly the modules whose symbols it uses, so no depmod output is needed.
func moduleDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("module %s: no .modinfo section", path)
	}
	b, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", path, err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			if len(v) == 0 {
				return nil, nil
			}
			return strings.Split(string(v), ","), nil
		}
	}
	return nil, nil
}

// moduleName is the name the kernel uses: the file name without .ko, '-' read as '_'.
func moduleName(file string) string {
	return strings.ReplaceAll(strings.TrimSuffix(filepath.Base(file), ".ko"), "-", "_")
}

// moduleIndex maps module names to their files under dir (lib/modules/<version>).
func moduleIndex(dir string) (map[string]string, error) {
	idx := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			idx[moduleName(p)] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("modules %s: %w", dir, err)
	}
	return idx, nil
}

// moduleLoadOrder returns the files of want and everything they depend on, each after its
// dependencies. A module missing from idx is an error naming it: a kernel flavour without
// it (Debian's cloud flavour has no 9p) cannot run the guest.
func moduleLoadOrder(idx map[string]string, want []string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("module %s: dependency cycle", name)
		case 2:
			return nil
		}
		file, ok := idx[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) is not in the kernel package", name, from)
			}
			return fmt.Errorf("module %s is not in the kernel package (a flavour without it cannot run the guest; use Debian's plain amd64 flavour)", name)
		}
		state[name] = 1
		deps, err := moduleDepends(file)
		if err != nil {
			return err
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, file)
		return nil
	}
	for _, w := range want {
		if err := visit(w, ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}
