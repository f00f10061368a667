package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/linksafe"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/vm/guestimage"
)

// The agent's root in the guest: what bwrap's arguments build for the bwrap tier.

// buildRoot assembles the agent's root under guestimage.AgentRoot: a tmpfs holding the 9p
// shares, home and tmp tmpfs, a minimal /dev, and anet-sandboxd at sandbox.SandboxSelf; then
// it makes the root read-only as the bwrap tier does.
func buildRoot(cfg GuestConfig) (time.Duration, error) {
	const nsd = unix.MS_NOSUID | unix.MS_NODEV
	r := func(p string) string { return filepath.Join(guestimage.AgentRoot, p) }
	if err := unix.Mount("tmpfs", guestimage.AgentRoot, "tmpfs", nsd, "mode=0755,size=1m"); err != nil {
		return 0, fmt.Errorf("mount agent root: %w", err)
	}
	// Home and tmp first: a share may lie below them (an agent tree under /tmp), as bwrap
	// binds the agent tree after them.
	size := "size=" + strconv.FormatInt(cfg.TmpBytes, 10)
	for _, d := range []string{sandbox.SandboxHome, sandbox.SandboxTmp} {
		if err := os.MkdirAll(r(d), 0o755); err != nil {
			return 0, err
		}
		opts := fmt.Sprintf("mode=0700,uid=%d,gid=%d,%s", cfg.UID, cfg.GID, size)
		if err := unix.Mount("tmpfs", r(d), "tmpfs", nsd, opts); err != nil {
			return 0, fmt.Errorf("mount %s: %w", d, err)
		}
	}
	t0 := time.Now()
	for _, s := range cfg.Shares {
		if err := os.MkdirAll(r(s.Mount), 0o755); err != nil {
			return 0, err
		}
		flags := uintptr(nsd)
		opts := "trans=virtio,version=9p2000.L,msize=512000"
		if s.ReadOnly {
			// Read-only shares never change under the run: let the guest cache them.
			flags |= unix.MS_RDONLY
			opts += ",cache=loose"
		}
		if err := unix.Mount(s.Tag, r(s.Mount), "9p", flags, opts); err != nil {
			return 0, fmt.Errorf("mount share %s at %s: %w", s.Tag, s.Mount, err)
		}
	}
	shares := time.Since(t0)
	for _, l := range cfg.Links {
		if err := os.MkdirAll(filepath.Dir(r(l.Path)), 0o755); err != nil {
			return 0, err
		}
		if err := os.Symlink(l.Target, r(l.Path)); err != nil {
			return 0, fmt.Errorf("link %s: %w", l.Path, err)
		}
	}
	if err := writeHomeFiles(r(sandbox.SandboxHome), cfg); err != nil {
		return 0, err
	}
	if err := minimalDev(r("/dev")); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(r("/proc"), 0o555); err != nil {
		return 0, err
	}
	self := r(sandbox.SandboxSelf)
	if err := os.MkdirAll(filepath.Dir(self), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(self, nil, 0o555); err != nil {
		return 0, err
	}
	if err := unix.Mount(guestimage.InitPath, self, "", unix.MS_BIND, ""); err != nil {
		return 0, fmt.Errorf("bind %s: %w", sandbox.SandboxSelf, err)
	}
	if err := unix.Mount("", self, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return 0, fmt.Errorf("remount %s: %w", sandbox.SandboxSelf, err)
	}
	if err := unix.Mount("", guestimage.AgentRoot, "", unix.MS_REMOUNT|unix.MS_RDONLY|nsd, ""); err != nil {
		return 0, fmt.Errorf("remount agent root read-only: %w", err)
	}
	return shares, nil
}

func writeHomeFiles(home string, cfg GuestConfig) error {
	for _, hf := range cfg.HomeFiles {
		if err := linksafe.ValidateRelPath(hf.Path); err != nil || hf.Mode&^0o700 != 0 {
			return fmt.Errorf("home file %q: refused", hf.Path)
		}
		p := filepath.Join(home, hf.Path)
		for d := filepath.Dir(p); d != home; d = filepath.Dir(d) {
			defer os.Lchown(d, cfg.UID, cfg.GID)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, hf.Content, os.FileMode(hf.Mode)); err != nil {
			return err
		}
		if err := os.Lchown(p, cfg.UID, cfg.GID); err != nil {
			return err
		}
	}
	return nil
}

// minimalDev is bwrap's --dev: the harmless nodes, a private devpts and a /dev/shm tmpfs.
func minimalDev(dev string) error {
	const nsd = unix.MS_NOSUID | unix.MS_NOEXEC
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", nsd, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, n := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}} {
		p := filepath.Join(dev, n.name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(n.major, n.minor))); err != nil {
			return fmt.Errorf("mknod %s: %w", p, err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return err
		}
	}
	for _, d := range []string{"pts", "shm"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", nsd, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount devpts: %w", err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for name, target := range map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return unix.Mount("", dev, "", unix.MS_REMOUNT|unix.MS_RDONLY|nsd, "")
}
