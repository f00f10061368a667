//go:build linux && (anettest || !amd64)

// The assembler: the policy tables (policy_linux.go) and the hand-written prefix
// (asm_linux.go) turned into the two programs. Release builds for amd64 do not link it: they
// hand bwrap the programs it assembled, kept in precomputed_amd64.go (filters_amd64.go).

package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"

	libseccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// build assembles both programs, leaving out the rules named in omit (syscall names, or
// RuleArch for the whole arch filter). Only test builds pass a non-empty omit.
func build(omit []string) ([][]byte, error) {
	spec, ok := archSpecs[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("seccomp filters for %s: %w", runtime.GOARCH, ErrUnsupported)
	}
	if err := checkOmit(spec, omit); err != nil {
		return nil, err
	}
	var progs [][]byte
	if !slices.Contains(omit, RuleArch) {
		insns, err := archProgram(spec)
		if err != nil {
			return nil, fmt.Errorf("assemble arch filter: %w", err)
		}
		raw, err := encode(insns)
		if err != nil {
			return nil, fmt.Errorf("assemble arch filter: %w", err)
		}
		progs = append(progs, raw)
	}
	insns, err := mainProgram(spec, omit)
	if err != nil {
		return nil, fmt.Errorf("assemble main filter: %w", err)
	}
	raw, err := encode(insns)
	if err != nil {
		return nil, fmt.Errorf("assemble main filter: %w", err)
	}
	return append(progs, raw), nil
}

// mainProgram is the hand-written argument prefix followed by the go-seccomp-bpf program
// for every rule the library expresses safely: unconditional denials, and clone's flags,
// which are a full `unsigned long` in the kernel, so its 64-bit BitsSet is exact.
func mainProgram(spec archSpec, omit []string) ([]bpf.Instruction, error) {
	native, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	if native.ID != spec.info.ID {
		// go-seccomp-bpf always assembles for the running arch; the prefix must agree.
		return nil, fmt.Errorf("arch table %s does not match running arch %s", spec.info.Name, native.Name)
	}
	var rules []argRule
	for _, r := range argRules {
		if !slices.Contains(omit, r.name) {
			rules = append(rules, r)
		}
	}
	prefix, err := argPrefix(spec, rules)
	if err != nil {
		return nil, err
	}
	policy := libseccomp.Policy{DefaultAction: libseccomp.ActionAllow}
	keep := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(omit, n) })
	}
	for _, r := range denyRules {
		policy.Syscalls = append(policy.Syscalls, libseccomp.SyscallGroup{
			Names:  keep(r.names),
			Action: libseccomp.ActionErrno | libseccomp.Action(r.errno),
		})
	}
	policy.Syscalls = append(policy.Syscalls, libseccomp.SyscallGroup{
		Names:  keep(spec.extraDeny),
		Action: libseccomp.ActionErrno | libseccomp.Action(unix.EPERM),
	})
	if !slices.Contains(omit, "clone") {
		policy.Syscalls = append(policy.Syscalls, libseccomp.SyscallGroup{
			NamesWithCondtions: []libseccomp.NameWithConditions{{
				Name: "clone",
				Conditions: libseccomp.ArgumentConditions{{
					Argument: 0, Operation: libseccomp.BitsSet, Value: cloneNewMask,
				}},
			}},
			Action: libseccomp.ActionErrno | libseccomp.Action(unix.EPERM),
		})
	}
	lib, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	return append(prefix, lib...), nil
}

// checkOmit refuses names that match no rule, so a weakened test build cannot silently
// weaken nothing.
func checkOmit(spec archSpec, omit []string) error {
	known := map[string]bool{RuleArch: true, "clone": true}
	for _, r := range denyRules {
		for _, n := range r.names {
			known[n] = true
		}
	}
	for _, n := range spec.extraDeny {
		known[n] = true
	}
	for _, r := range argRules {
		known[r.name] = true
	}
	for _, n := range omit {
		if !known[n] {
			return fmt.Errorf("omit %q: no such rule", n)
		}
	}
	return nil
}

// encode turns instructions into the bytes of a struct sock_filter array, native byte order.
func encode(insns []bpf.Instruction) ([]byte, error) {
	if len(insns) == 0 || len(insns) > maxInsns {
		return nil, fmt.Errorf("program of %d instructions (1..%d allowed)", len(insns), maxInsns)
	}
	raw, err := bpf.Assemble(insns)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
