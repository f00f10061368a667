package guestimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"anet.dev/anet/pkg/reasons"
)

// Kernel is a guest kernel ready to boot, as recorded in its cache dir's manifest.
type Kernel struct {
	// Version is the kernel release (uname -r in the guest), e.g. 6.1.0-57-amd64.
	Version string `json:"version"`
	// Package is the linux-image package file it came from; Key identifies that file's
	// version (path, size and modification time), so a replaced package is extracted anew
	// without hashing 70 MB at every start.
	Package string `json:"package"`
	Key     string `json:"key"`
	// Modules are the module file names under Dir/modules, in load order.
	Modules []string `json:"modules"`
	// Dir is the cache dir holding vmlinux, modules/ and manifest.json (not recorded).
	Dir string `json:"-"`
}

// Vmlinux is the PVH kernel ELF QEMU boots.
func (k Kernel) Vmlinux() string { return filepath.Join(k.Dir, "vmlinux") }

// ModulePaths are the module files in load order.
func (k Kernel) ModulePaths() []string {
	out := make([]string, len(k.Modules))
	for i, m := range k.Modules {
		out[i] = filepath.Join(k.Dir, "modules", m)
	}
	return out
}

// KernelSource says where the guest kernel comes from.
type KernelSource struct {
	// Package is a Debian linux-image .deb; "" searches PackageDirs.
	Package string
	// PackageDirs are searched for linux-image-<version>-amd64_*.deb (the plain flavour:
	// the cloud flavour has no 9p). Nil means defaultPackageDirs.
	PackageDirs []string
	// CacheDir holds the extracted kernels (<cache>/anet/vm).
	CacheDir string
}

// defaultPackageDirs: where the operator (`apt-get download` in /var/cache/anet), a package
// shipping a guest kernel, or apt itself leaves one. apt's own archive dir comes last: many
// hosts clean it after every install (Debian's container images do).
var defaultPackageDirs = []string{"/var/cache/anet", "/usr/share/anet/guest", "/var/cache/apt/archives"}

var prepareMu sync.Mutex // one extraction at a time per process

// PrepareKernel returns the cached guest kernel for src, extracting it first when the cache
// has none for the package found. Extraction runs dpkg-deb and the kernel's decompressor;
// the result is written to a temporary dir and renamed into place, so a crash leaves no
// half-written kernel.
func PrepareKernel(ctx context.Context, src KernelSource) (Kernel, error) {
	prepareMu.Lock()
	defer prepareMu.Unlock()
	deb, err := findKernelPackage(src)
	if err != nil {
		return Kernel{}, err
	}
	sum, err := fileKey(deb)
	if err != nil {
		return Kernel{}, reasons.New(reasons.VMNoGuestKernel, err.Error())
	}
	dir := filepath.Join(src.CacheDir, "kernel-"+sum[:16])
	if k, err := readManifest(dir); err == nil && k.Key == sum {
		return k, nil
	}
	if err := os.MkdirAll(src.CacheDir, 0o700); err != nil {
		return Kernel{}, fmt.Errorf("guest kernel cache: %w", err)
	}
	tmp, err := os.MkdirTemp(src.CacheDir, ".extract-")
	if err != nil {
		return Kernel{}, fmt.Errorf("guest kernel cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	k, err := extractKernel(ctx, deb, sum, tmp)
	if err != nil {
		return Kernel{}, reasons.New(reasons.VMNoGuestKernel, err.Error())
	}
	_ = os.RemoveAll(dir) // a stale or partial one
	if err := os.Rename(filepath.Join(tmp, "out"), dir); err != nil {
		return Kernel{}, fmt.Errorf("guest kernel cache: %w", err)
	}
	k.Dir = dir
	return k, nil
}

// findKernelPackage picks src.Package, or the newest plain-flavour linux-image package in
// the search dirs.
func findKernelPackage(src KernelSource) (string, error) {
	if src.Package != "" {
		if _, err := os.Stat(src.Package); err != nil {
			return "", reasons.New(reasons.VMNoGuestKernel, err.Error())
		}
		return src.Package, nil
	}
	dirs := src.PackageDirs
	if dirs == nil {
		dirs = defaultPackageDirs
	}
	var found []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "linux-image-[0-9]*-amd64_*_amd64.deb"))
		for _, p := range m {
			base := filepath.Base(p)
			if strings.Contains(base, "-cloud-") || strings.Contains(base, "-rt-") || strings.Contains(base, "-dbg") {
				continue
			}
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return "", reasons.New(reasons.VMNoGuestKernel, fmt.Sprintf("no linux-image-*-amd64 package in %s", strings.Join(dirs, ", ")))
	}
	sort.Slice(found, func(i, j int) bool { return filepath.Base(found[i]) < filepath.Base(found[j]) })
	return found[len(found)-1], nil
}

func extractKernel(ctx context.Context, deb, sum, tmp string) (Kernel, error) {
	raw := filepath.Join(tmp, "deb")
	cmd := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		return Kernel{}, fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, strings.TrimSpace(string(out)))
	}
	bzs, _ := filepath.Glob(filepath.Join(raw, "boot", "vmlinuz-*"))
	if len(bzs) != 1 {
		return Kernel{}, fmt.Errorf("%s: want one boot/vmlinuz-*, found %d", deb, len(bzs))
	}
	version := strings.TrimPrefix(filepath.Base(bzs[0]), "vmlinuz-")
	bz, err := os.ReadFile(bzs[0])
	if err != nil {
		return Kernel{}, err
	}
	vmlinux, err := extractVmlinux(ctx, bz)
	if err != nil {
		return Kernel{}, fmt.Errorf("%s: %w", bzs[0], err)
	}
	idx, err := moduleIndex(filepath.Join(raw, "lib", "modules", version))
	if err != nil {
		return Kernel{}, err
	}
	order, err := moduleLoadOrder(idx, guestModules)
	if err != nil {
		return Kernel{}, fmt.Errorf("%s: %w", deb, err)
	}
	out := filepath.Join(tmp, "out")
	if err := os.MkdirAll(filepath.Join(out, "modules"), 0o700); err != nil {
		return Kernel{}, err
	}
	k := Kernel{Version: version, Package: deb, Key: sum}
	for _, m := range order {
		name := filepath.Base(m)
		if err := copyFile(m, filepath.Join(out, "modules", name)); err != nil {
			return Kernel{}, err
		}
		k.Modules = append(k.Modules, name)
	}
	if err := os.WriteFile(filepath.Join(out, "vmlinux"), vmlinux, 0o600); err != nil {
		return Kernel{}, err
	}
	mf, _ := json.MarshalIndent(k, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), append(mf, '\n'), 0o600); err != nil {
		return Kernel{}, err
	}
	return k, nil
}

func readManifest(dir string) (Kernel, error) {
	var k Kernel
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return k, err
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	k.Dir = dir
	for _, p := range append(k.ModulePaths(), k.Vmlinux()) {
		if _, err := os.Stat(p); err != nil {
			return k, err
		}
	}
	if k.Version == "" || len(k.Modules) == 0 {
		return k, errors.New("manifest incomplete")
	}
	return k, nil
}

func fileKey(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano()))
	return hex.EncodeToString(h[:]), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
