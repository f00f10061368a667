//go:build anettest && linux

package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guest is one finished boot of the rig's guest.
type guest struct {
	accelNote   string        // which accelerator ran it, and why
	boot, total time.Duration // QEMU's start to run.sh's start; to QEMU's exit
	console     string        // the serial console's file
}

// The console lines that mark the guest's progress (the kernel's banner; the rig unit's).
const (
	markKernel  = "Linux version"
	markRig     = "anet-rig: share mounted"
	markNoShare = "anet-rig: cannot mount"
)

// Timeouts: the whole run under each accelerator (ANET_HOSTS_TIMEOUT overrides), and how long
// KVM may take to print the kernel's banner before it counts as unusable here (a nested host
// whose /dev/kvm opens but whose guests never start: then the run goes to TCG).
var (
	runTimeout    = map[string]time.Duration{"kvm": 10 * time.Minute, "tcg": 22 * time.Minute}
	kvmBannerWait = 20 * time.Second
)

// bootGuest boots the image with the share at /rig and waits for the guest to power off:
// under KVM where /dev/kvm opens and a kernel starts on it, else under TCG (ANET_HOSTS_ACCEL
// forces one). The image stays pristine (-snapshot); the guest has no network device.
func bootGuest(t *testing.T, s suite, share, console string) guest {
	t.Helper()
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Fatalf("qemu-system-x86_64: %v (bash scripts/deps.sh ensure hosts installs it)", err)
	}
	accels := []string{"tcg"}
	note := ""
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
		f.Close()
		accels = []string{"kvm", "tcg"}
	} else {
		note = "no usable /dev/kvm (" + err.Error() + ")"
	}
	if a := os.Getenv("ANET_HOSTS_ACCEL"); a != "" {
		if a != "kvm" && a != "tcg" {
			t.Fatalf("ANET_HOSTS_ACCEL=%s: want kvm or tcg", a)
		}
		accels, note = []string{a}, "forced by ANET_HOSTS_ACCEL"
	}
	for i, accel := range accels {
		timeout := runTimeout[accel]
		if s := os.Getenv("ANET_HOSTS_TIMEOUT"); s != "" {
			if timeout, err = time.ParseDuration(s); err != nil {
				t.Fatalf("ANET_HOSTS_TIMEOUT: %v", err)
			}
		}
		g, fallback, err := runQEMU(t, s, qemu, accel, share, console, timeout, i < len(accels)-1)
		if errors.Is(err, errNoRig) && accel == "tcg" {
			if oops := emulatorFault(console); oops != "" {
				// TCG runs the guest's vCPUs on threads of its own, and a kernel patching its
				// own code (jump labels) now and then hits a stale translation on the other
				// vCPU: an Oops at int3 early in the boot, seen on Debian 13's kernel. That
				// is QEMU's fault, not the guest's or the node's: the boot, in which no
				// scenario ran, is tried once more, and the first console is kept.
				os.Rename(console, console+".oops")
				t.Logf("hosts rig: the %s guest's kernel failed under TCG before the rig started (%s; console kept in %s.oops): booting it once more", s.what, oops, console)
				g, fallback, err = runQEMU(t, s, qemu, accel, share, console, timeout, false)
			}
		}
		if fallback != "" {
			t.Logf("hosts rig: %s", fallback)
			note = fallback
			os.Rename(console, console+"."+accel)
			continue
		}
		if err != nil {
			t.Fatalf("hosts rig: the guest under %s: %v\n--- the console's tail (all: %s):\n%s", accel, err, console, readTail(console, 80))
		}
		g.accelNote = strings.ToUpper(accel)
		if note != "" {
			g.accelNote += " (" + note + ")"
		}
		return g
	}
	t.Fatal("hosts rig: no accelerator booted the guest")
	return guest{}
}

// errNoRig is a boot that ended before the guest started the rig: no scenario ran.
var errNoRig = errors.New("the guest powered off without starting the rig")

// emulatorFault is the first line of a kernel failure in console ("Oops:", "Kernel panic"),
// or "".
func emulatorFault(console string) string {
	b, err := os.ReadFile(console)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Oops:") || strings.Contains(l, "Kernel panic") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// runQEMU runs one boot. fallback is set (and err nil) when a KVM guest never printed the
// kernel's banner and another accelerator may be tried.
func runQEMU(t *testing.T, s suite, qemu, accel, share, console string, timeout time.Duration, mayFallBack bool) (g guest, fallback string, err error) {
	t.Helper()
	img, kernel, initrd := s.files()
	cmdline := "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 panic=-1"
	if s.cmdline != "" {
		cmdline += " " + s.cmdline
	}
	// -cpu max is everything the accelerator can give; arch-capabilities is left out because
	// QEMU 7.2 asserts on a KVM host (a nested one) that refuses to set that MSR.
	args := []string{
		"-machine", "q35,accel=" + accel, "-cpu", "max,-arch-capabilities",
		"-m", "3072", "-smp", "2", "-nographic", "-nic", "none", "-snapshot", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd, "-append", cmdline,
		"-drive", "file=" + img + ",if=virtio,format=raw",
		"-virtfs", "local,path=" + share + ",mount_tag=rig,security_model=none,id=rig",
	}
	con, err := os.Create(console)
	if err != nil {
		return g, "", err
	}
	defer con.Close()
	cmd := exec.Command(qemu, args...)
	cmd.Stdout, cmd.Stderr = con, con
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return g, "", fmt.Errorf("start %s: %w", qemu, err)
	}
	t.Logf("hosts rig: booting the %s guest under %s (timeout %s): %s %s", s.what, strings.ToUpper(accel), timeout, qemu, strings.Join(args, " "))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	var sawKernel, sawRig bool
	for {
		select {
		case err := <-done:
			g.total = time.Since(start)
			g.console = console
			if err != nil {
				return g, "", fmt.Errorf("QEMU: %w", err)
			}
			if !sawRig {
				return g, "", errNoRig
			}
			if _, err := os.Stat(filepath.Join(share, "out", "done")); err != nil {
				return g, "", fmt.Errorf("run.sh did not finish (no out/done)")
			}
			return g, "", nil
		case <-deadline:
			cmd.Process.Kill()
			<-done
			return g, "", fmt.Errorf("no power-off within %s: QEMU killed", timeout)
		case <-tick.C:
			b, _ := os.ReadFile(console)
			if !sawKernel && bytes.Contains(b, []byte(markKernel)) {
				sawKernel = true
			}
			if !sawRig && bytes.Contains(b, []byte(markRig)) {
				sawRig, g.boot = true, time.Since(start)
			}
			if bytes.Contains(b, []byte(markNoShare)) {
				cmd.Process.Kill()
				<-done
				return g, "", fmt.Errorf("the guest could not mount the share")
			}
			if accel == "kvm" && mayFallBack && !sawKernel && time.Since(start) > kvmBannerWait {
				cmd.Process.Kill()
				<-done
				return g, fmt.Sprintf("KVM: /dev/kvm opens but no guest kernel started on it within %s; using TCG", kvmBannerWait), nil
			}
		}
	}
}
