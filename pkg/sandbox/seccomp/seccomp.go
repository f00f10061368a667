// Package seccomp builds the two seccomp-BPF programs every sandboxed run gets (S4, L1).
//
// The first program (the arch filter) kills the process on any system call made through a
// foreign ABI: a non-native audit arch (i386 `int 0x80` on x86_64, AArch32 on arm64) or, on
// x86_64, an x32 call (nr ≥ 0x40000000). The second (the main filter) allows by default and
// denies the interfaces of S4 (docs/requirements.md): namespaces, mounting, tracing,
// modules, io_uring, bpf, perf, userfaultfd, the keyring, TIOCSTI/TIOCLINUX, personality,
// NUMA, and socket families other than AF_UNIX, AF_INET and AF_INET6.
//
// The programs are raw `struct sock_filter` arrays in native byte order, written to a sealed
// memfd (WriteMemfd) and handed to bwrap with one `--add-seccomp-fd` each. bwrap installs them
// with NO_NEW_PRIVS as its last step before execve, so its own mount and unshare calls are not
// affected. The kernel runs every installed filter and applies the most severe verdict, so the
// arch filter's kill wins over the main filter's default allow for foreign-ABI calls.
//
// Two pitfalls of seccomp shape the hand-written parts; comments cite them by number:
//
//  1. seccomp_data holds every argument as 64 bits, but the kernel truncates an `int` or
//     `unsigned int` argument (ioctl's request, socket's family, personality) to its low 32
//     bits before acting on it. A rule that compares all 64 bits is bypassed by setting any
//     high bit, so such rules compare the low 32 bits only.
//  2. A filter written for the native syscall table sees foreign-ABI calls (i386 `int 0x80`,
//     x32) with other numbers; in a default-allow filter they pass. The arch filter kills
//     every one of them before the main filter's table matters.
package seccomp

import "errors"

// Options configures Filters. It is empty on purpose: the programs do not depend on the run,
// and a release build offers no way to weaken them. Test builds (tag anettest) can build a
// weakened pair with FiltersWeakened.
type Options struct{}

// RuleArch names the arch filter in FiltersWeakened's omit list (test builds only).
const RuleArch = "arch"

// ErrUnsupported is returned on platforms or architectures without a filter definition.
// Callers must fail closed (reasons.SeccompFailed / reasons.PlatformUnsupport).
var ErrUnsupported = errors.New("seccomp: unsupported platform or architecture")
