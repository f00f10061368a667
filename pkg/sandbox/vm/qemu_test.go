package vm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func goldenMachine() Machine {
	return Machine{
		Accel: AccelTCG, MemoryMiB: 2048, CPUs: 1,
		Kernel: "/run/anet/vmlinux", Initrd: "/run/anet/initramfs", Cmdline: KernelCmdline(2445426, TransportSerial, 0),
		Transport: TransportSerial, LinkSocket: "/run/anet/link.sock",
		Shares: []Share{{Tag: "sys_usr", Path: "/usr", ReadOnly: true}, {Tag: "agent", Path: "/run/anet/agent", ReadOnly: true}, {Tag: "work", Path: "/work"}},
	}
}

// TestQEMUArgsGolden pins the whole QEMU command line (V1): microvm, no NIC/USB/graphics,
// QEMU's seccomp sandbox, memory = the run's limit. Run with -update after a deliberate
// change and review the diff.
func TestQEMUArgsGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		m    func(Machine) Machine
	}{
		{"tcg_serial", func(m Machine) Machine { return m }},
		{"kvm_vsock", func(m Machine) Machine {
			m.Accel, m.Transport, m.LinkSocket, m.VsockCID, m.CPUs = AccelKVM, TransportVsock, "", 1234, 2
			m.Cmdline = KernelCmdline(0, TransportVsock, 5000)
			return m
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, err := QEMUArgs(c.m(goldenMachine()))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(args, "\n") + "\n"
			path := filepath.Join("testdata", "qemu_"+c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run go test -update once): %v", err)
			}
			if got != string(want) {
				t.Fatalf("QEMUArgs differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// TestQEMUArgsNeverAddsADevice: whatever the machine, the argv has no network, USB, display
// or drive, and the sandbox and -nodefaults are always there (V1).
func TestQEMUArgsNeverAddsADevice(t *testing.T) {
	args, err := QEMUArgs(goldenMachine())
	if err != nil {
		t.Fatal(err)
	}
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{" -nodefaults ", " -no-user-config ", " -display none ", " -sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny ", " -m 2048M ", " microvm,"} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q", want)
		}
	}
	for _, bad := range []string{"-net", "-netdev", "-nic", "usb", "-vga", "-drive", "-monitor", "-qmp", "-vnc", "-spice"} {
		if strings.Contains(joined, bad) {
			t.Errorf("args contain %q: %s", bad, joined)
		}
	}
}

// TestQEMUArgsRefusesBadMachines: a path with a comma cannot smuggle a QEMU option in (V1).
func TestQEMUArgsRefusesBadMachines(t *testing.T) {
	for name, f := range map[string]func(*Machine){
		"comma in path":      func(m *Machine) { m.Kernel = "/x,readonly=off" },
		"comma in share":     func(m *Machine) { m.Shares[0].Path = "/usr,security_model=passthrough" },
		"relative path":      func(m *Machine) { m.Initrd = "initrd" },
		"bad tag":            func(m *Machine) { m.Shares[0].Tag = "Usr/" },
		"duplicate tag":      func(m *Machine) { m.Shares[1].Tag = m.Shares[0].Tag },
		"three cpus":         func(m *Machine) { m.CPUs = 3 },
		"tiny memory":        func(m *Machine) { m.MemoryMiB = 16 },
		"unknown accel":      func(m *Machine) { m.Accel = "hvf" },
		"reserved vsock cid": func(m *Machine) { m.Transport, m.VsockCID = TransportVsock, 2 },
		"no transport":       func(m *Machine) { m.Transport = "" },
	} {
		t.Run(name, func(t *testing.T) {
			m := goldenMachine()
			m.Shares = append([]Share(nil), m.Shares...)
			f(&m)
			if args, err := QEMUArgs(m); err == nil {
				t.Fatalf("QEMUArgs = %v, want an error", args)
			}
		})
	}
}

// TestKernelCmdlinePassesTheGuestCommandLast (V1).
func TestKernelCmdlinePassesTheGuestCommandLast(t *testing.T) {
	c := KernelCmdline(0, TransportSerial, 0)
	if !strings.HasSuffix(c, " -- "+GuestCommand+" --link serial") {
		t.Fatalf("cmdline %q: init's arguments must follow the final --", c)
	}
	if strings.Contains(c, "tsc_early_khz") {
		t.Fatalf("cmdline %q: a TSC rate only under TCG", c)
	}
	if !strings.Contains(KernelCmdline(2000000, TransportSerial, 0), " tsc_early_khz=2000000 ") {
		t.Fatal("TCG cmdline lacks the TSC rate")
	}
}

// TestValidTag: a share's 9p mount tag is [a-z0-9_]{1,31}, for QEMU's -fsdev and the guest.
func TestValidTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"work": true, "sys_usr": true, "a": true, "0_9": true, strings.Repeat("x", 31): true,
		"": false, strings.Repeat("x", 32): false, "Usr": false, "a-b": false, "a/b": false,
		"a,b": false, "a b": false, "é": false, "a\x00": false,
	} {
		if got := validTag(tag); got != want {
			t.Errorf("validTag(%q) = %v, want %v", tag, got, want)
		}
	}
}
