package guestimage_test

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// TestPrepareKernelFromDebianPackage: the guest kernel comes from the plain-flavour Debian
// package, its version is recorded, and the modules are listed after their dependencies (V1).
func TestPrepareKernelFromDebianPackage(t *testing.T) {
	cache := kernelCache(t)
	k, err := guestimage.PrepareKernel(context.Background(), guestimage.KernelSource{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(filepath.Base(k.Package), "linux-image-"+k.Version+"_") {
		t.Errorf("version %q does not match the package %s", k.Version, k.Package)
	}
	again, err := guestimage.PrepareKernel(context.Background(), guestimage.KernelSource{CacheDir: cache})
	if err != nil || again.Dir != k.Dir {
		t.Errorf("second PrepareKernel = %s, %v; want the cached %s", again.Dir, err, k.Dir)
	}
	pos := func(name string) int { return slices.Index(k.Modules, name+".ko") }
	for _, dep := range [][2]string{{"virtio", "virtio_mmio"}, {"virtio_ring", "virtio_console"}, {"9pnet", "9pnet_virtio"}, {"9pnet", "9p"}, {"vsock", "vmw_vsock_virtio_transport"}} {
		if pos(dep[0]) < 0 || pos(dep[1]) < 0 || pos(dep[0]) > pos(dep[1]) {
			t.Errorf("modules %v: want %s before %s", k.Modules, dep[0], dep[1])
		}
	}
	f, err := elf.Open(k.Vmlinux())
	if err != nil {
		t.Fatalf("vmlinux: %v", err)
	}
	f.Close()
}

// TestPrepareKernelRefusesAFlavourWithout9p: a kernel package missing a guest module is a
// clear vm_no_guest_kernel, not a guest that hangs at boot.
func TestPrepareKernelRefusesMissingPackage(t *testing.T) {
	_, err := guestimage.PrepareKernel(context.Background(), guestimage.KernelSource{PackageDirs: []string{t.TempDir()}, CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), string(reasons.VMNoGuestKernel)) {
		t.Fatalf("PrepareKernel with no package = %v, want %s", err, reasons.VMNoGuestKernel)
	}
}

// TestInitramfsHoldsInitAndModules reads the archive back with the same library: the guest
// init with its loader and libraries, /dev/console, and the modules with their order.
func TestInitramfsHoldsInitAndModules(t *testing.T) {
	cache := kernelCache(t)
	k, err := guestimage.PrepareKernel(context.Background(), guestimage.KernelSource{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	bin := testharness.Bin(t, "anet-sandboxd")
	img, err := guestimage.BuildInitramfs(bin, k, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(f))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]cpio.Record{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	initRec, ok := byName["init"]
	if fi, _ := os.Stat(bin); !ok || initRec.FileSize != uint64(fi.Size()) || initRec.Mode&0o777 != 0o755 {
		t.Fatalf("init record %+v, want the %s binary, 0755", initRec.Info, bin)
	}
	if c, ok := byName["dev/console"]; !ok || c.Mode&cpio.S_IFMT != cpio.S_IFCHR || c.Rmajor != 5 || c.Rminor != 1 {
		t.Errorf("dev/console = %+v, want char 5:1", c.Info)
	}
	for _, m := range k.Modules {
		if _, ok := byName["modules/"+m]; !ok {
			t.Errorf("module %s missing", m)
		}
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				p.ReadAt(b, 0)
				interp := strings.TrimPrefix(strings.TrimRight(string(b), "\x00"), "/")
				if _, ok := byName[interp]; !ok {
					t.Errorf("dynamic init without its loader %s in the archive", interp)
				}
			}
		}
	}
	// Built once per (init, kernel): a second call reuses the file.
	again, err := guestimage.BuildInitramfs(bin, k, filepath.Dir(img))
	if err != nil || again != img {
		t.Errorf("second BuildInitramfs = %s, %v; want the cached %s", again, err, img)
	}
}
