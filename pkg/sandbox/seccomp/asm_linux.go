//go:build linux && (anettest || !amd64)

package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// Return values, as the kernel reads them.
const (
	retAllow       = unix.SECCOMP_RET_ALLOW
	retKillProcess = unix.SECCOMP_RET_KILL_PROCESS
	retErrno       = unix.SECCOMP_RET_ERRNO
)

func retErr(e unix.Errno) uint32 { return retErrno | uint32(e)&unix.SECCOMP_RET_DATA }

// argLow returns the offset of the low 32 bits of syscall argument i. The kernel truncates
// `int` and `unsigned int` arguments (ioctl's request, socket's family, personality) to these
// bits, so rules on them must look here and nowhere else (pitfall 1 in the package doc).
func argLow(i int) uint32 {
	off := uint32(offArgs + 8*i)
	if nativeBigEndian() {
		off += 4
	}
	return off
}

func nativeBigEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 0
}

// asm is a tiny forward-only assembler with named labels for the hand-written programs.
type asm struct {
	insns  []bpf.Instruction
	fixups []fixup
	labels map[string]int
}

type fixup struct {
	at          int
	onTrue, onF string // "" means the next instruction
}

func newAsm() *asm { return &asm{labels: map[string]int{}} }

func (a *asm) ld(off uint32) {
	a.insns = append(a.insns, bpf.LoadAbsolute{Off: off, Size: 4})
}

// jmp compares the accumulator with val and goes to onTrue or onFalse ("" = next).
func (a *asm) jmp(cond bpf.JumpTest, val uint32, onTrue, onFalse string) {
	a.fixups = append(a.fixups, fixup{at: len(a.insns), onTrue: onTrue, onF: onFalse})
	a.insns = append(a.insns, bpf.JumpIf{Cond: cond, Val: val})
}

// ja always goes to label.
func (a *asm) ja(label string) {
	a.fixups = append(a.fixups, fixup{at: len(a.insns), onTrue: label})
	a.insns = append(a.insns, bpf.Jump{})
}

func (a *asm) ret(v uint32) { a.insns = append(a.insns, bpf.RetConstant{Val: v}) }

func (a *asm) label(name string) { a.labels[name] = len(a.insns) }

// resolve fills in the jump offsets. end names a label placed just past the last
// instruction (the start of whatever program is appended), or "" for none.
func (a *asm) resolve(end string) ([]bpf.Instruction, error) {
	if end != "" {
		a.labels[end] = len(a.insns)
	}
	skip := func(from int, label string) (int, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok {
			return 0, fmt.Errorf("undefined label %q", label)
		}
		if to <= from {
			return 0, fmt.Errorf("backward jump to %q", label)
		}
		return to - from - 1, nil
	}
	for _, f := range a.fixups {
		t, err := skip(f.at, f.onTrue)
		if err != nil {
			return nil, err
		}
		switch ins := a.insns[f.at].(type) {
		case bpf.Jump:
			ins.Skip = uint32(t)
			a.insns[f.at] = ins
		case bpf.JumpIf:
			e, err := skip(f.at, f.onF)
			if err != nil {
				return nil, err
			}
			if t > 255 || e > 255 {
				return nil, fmt.Errorf("conditional jump at %d too long", f.at)
			}
			ins.SkipTrue, ins.SkipFalse = uint8(t), uint8(e)
			a.insns[f.at] = ins
		}
	}
	return a.insns, nil
}

// archProgram is hand-written because go-seccomp-bpf gives foreign-arch calls the policy's
// default action (allow, in our default-allow main filter: pitfall 2 in the package doc) and answers x32
// with ENOSYS. Kill, not EPERM: no legitimate program in the sandbox makes foreign-ABI calls
// (a 32-bit binary would make nothing else), an errno would let a 32-bit exploit keep probing,
// and a kill is unambiguous in the attack battery and in the kernel's audit log.
func archProgram(spec archSpec) ([]bpf.Instruction, error) {
	a := newAsm()
	a.ld(offArch)
	a.jmp(bpf.JumpEqual, spec.auditArch, "", "kill")
	if spec.x32 {
		// Unsigned compare: this also kills nr -1 and other negative numbers, which no
		// real program issues (the kernel answers ENOSYS to them anyway).
		a.ld(offNr)
		a.jmp(bpf.JumpGreaterOrEqual, x32SyscallBit, "kill", "")
	}
	a.ret(retAllow)
	a.label("kill")
	a.ret(retKillProcess)
	return a.resolve("")
}

// argRule is a rule on one 32-bit argument, hand-written because go-seccomp-bpf compares all
// 64 bits: a denylist Equal(TIOCSTI) is bypassed by setting any of the high 32 bits, which
// the kernel then drops (pitfall 1 in the package doc). The allowlists (socket families, personality)
// compare the same 32 bits so that they mean exactly what the kernel will act on.
type argRule struct {
	name string // syscall
	arg  int
	// deny: the listed values are refused (denylist); otherwise only they pass (allowlist).
	deny   bool
	values []uint32
	errno  unix.Errno
}

var argRules = []argRule{
	{name: "ioctl", arg: 1, deny: true, values: []uint32{ioctlTIOCSTI, ioctlTIOCLINUX}, errno: unix.EPERM},
	{name: "socket", arg: 0, values: allowedFamilies, errno: unix.EAFNOSUPPORT},
	{name: "socketpair", arg: 0, values: allowedFamilies, errno: unix.EAFNOSUPPORT},
	{name: "personality", arg: 0, values: []uint32{personaLinux, personaQuery}, errno: unix.EPERM},
}

// argPrefix is the hand-written head of the main filter. Every path that does not refuse
// the call continues at the first instruction after the prefix, where the go-seccomp-bpf
// program starts (it loads arch and nr itself), so library rules still apply afterwards.
func argPrefix(spec archSpec, rules []argRule) ([]bpf.Instruction, error) {
	const next = "lib"
	a := newAsm()
	a.ld(offArch)
	a.jmp(bpf.JumpEqual, spec.auditArch, "", next)
	a.ld(offNr)
	for i, r := range rules {
		nr, ok := spec.info.SyscallNames[r.name]
		if !ok {
			return nil, fmt.Errorf("syscall %s unknown on %s", r.name, spec.info.Name)
		}
		a.jmp(bpf.JumpEqual, uint32(nr), fmt.Sprintf("rule%d", i), "")
	}
	a.ja(next)
	for i, r := range rules {
		a.label(fmt.Sprintf("rule%d", i))
		a.ld(argLow(r.arg))
		refuse := fmt.Sprintf("refuse%d", i)
		for _, v := range r.values {
			if r.deny {
				a.jmp(bpf.JumpEqual, v, refuse, "")
			} else {
				a.jmp(bpf.JumpEqual, v, next, "")
			}
		}
		if r.deny {
			a.ja(next)
		}
		a.label(refuse)
		a.ret(retErr(r.errno))
	}
	return a.resolve(next)
}
