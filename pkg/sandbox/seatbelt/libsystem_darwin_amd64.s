// Trampolines to libSystem for libsystem_darwin.go, as golang.org/x/sys/unix writes them.

#include "textflag.h"

TEXT libc_dlsym_trampoline<>(SB),NOSPLIT,$0-0
	JMP	libc_dlsym(SB)
GLOBL	·libc_dlsym_trampoline_addr(SB), RODATA, $8
DATA	·libc_dlsym_trampoline_addr(SB)/8, $libc_dlsym_trampoline<>(SB)

TEXT libc_ptsname_trampoline<>(SB),NOSPLIT,$0-0
	JMP	libc_ptsname(SB)
GLOBL	·libc_ptsname_trampoline_addr(SB), RODATA, $8
DATA	·libc_ptsname_trampoline_addr(SB)/8, $libc_ptsname_trampoline<>(SB)
