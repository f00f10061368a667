#include "textflag.h"

// func int80raw(nr, a1, a2, a3 uint32) uint32
// Makes an i386 system call from this 64-bit process; the kernel answers it from the 32-bit
// table with AUDIT_ARCH_I386 in seccomp_data.
TEXT ·int80raw(SB), NOSPLIT, $0-20
	MOVL nr+0(FP), AX
	MOVL a1+4(FP), BX
	MOVL a2+8(FP), CX
	MOVL a3+12(FP), DX
	INT  $0x80
	MOVL AX, ret+16(FP)
	RET
