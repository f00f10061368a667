package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// maxInsns is the kernel's BPF_MAXINSNS for one seccomp program.
const maxInsns = 4096

// x32SyscallBit marks an x32 system call on x86_64.
const x32SyscallBit = 0x40000000

// decode turns the bytes of a struct sock_filter array (native byte order) into
// instructions, for WriteMemfd's check, Install and the tests; encode is its inverse.
func decode(prog []byte) ([]bpf.RawInstruction, error) {
	if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > maxInsns {
		return nil, fmt.Errorf("program of %d bytes is not 1..%d struct sock_filter", len(prog), maxInsns)
	}
	out := make([]bpf.RawInstruction, len(prog)/8)
	for i := range out {
		b := prog[8*i:]
		out[i] = bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(b[0:2]), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:8]),
		}
	}
	return out, nil
}
