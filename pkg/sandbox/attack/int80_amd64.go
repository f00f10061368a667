package attack

//go:noescape
func int80raw(nr, a1, a2, a3 uint32) uint32

// int80 makes an i386 system call through `int $0x80`.
func int80(nr, a1, a2, a3 uint32) (uint32, bool) { return int80raw(nr, a1, a2, a3), true }
