package boundaries

import "testing"

// `anet-sandboxd exec` is a new process for every command it runs, so every package its
// release build links is initialised on every launch. On amd64 the seccomp programs are the
// assembler's output kept in the source (pkg/sandbox/seccomp, S4): the release build links
// neither the assembler's library nor its syscall tables of every architecture, which it
// built at each start. Test builds link it (the weakened filters of the self-test are
// assembled), and so do the architectures without kept programs.
func TestSandboxdReleaseLinksNoSeccompAssembler(t *testing.T) {
	const bin, asm = "anet.dev/anet/cmd/anet-sandboxd", "github.com/elastic/go-seccomp-bpf"
	for _, tc := range []struct {
		goarch string
		tags   []string
		want   bool
	}{
		{"amd64", nil, false},
		{"amd64", []string{"anettest"}, true},
		{"arm64", nil, true},
	} {
		d := depsOn(t, "linux", tc.goarch, bin, tc.tags...)
		if !d["anet.dev/anet/pkg/sandbox/seccomp"] {
			t.Fatalf("linux/%s %v: anet-sandboxd does not link pkg/sandbox/seccomp: the check would prove nothing", tc.goarch, tc.tags)
		}
		if d[asm] != tc.want || d[asm+"/arch"] != tc.want {
			t.Errorf("linux/%s, tags %v: anet-sandboxd links %s = %v, want %v", tc.goarch, tc.tags, asm, d[asm], tc.want)
		}
	}
}
