//go:build linux && amd64

package seccomp

// Filters returns the arch filter and the main filter, in that order, as raw BPF programs
// (8-byte struct sock_filter in native byte order), one per `--add-seccomp-fd`; each call
// returns fresh copies. On amd64 they are the assembler's output kept in the source
// (precomputed_amd64.go), so a launch neither assembles them nor links the assembler and its
// syscall tables, whose start-up every `anet-sandboxd exec` paid. A test proves them
// byte for byte what the assembler builds from the policy (TestPrecomputedIsAssembled), and
// the kernel and sandbox tests run these very bytes.
func Filters(opts Options) ([][]byte, error) {
	out := make([][]byte, len(precomputed))
	for i, p := range precomputed {
		out[i] = []byte(p)
	}
	return out, nil
}
