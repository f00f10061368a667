package dialer

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRedirectHookOnlyInTestBuilds: the file that lets tests send a verified address to a
// loopback fake is compiled only with the anettest tag; a release build of this package
// contains the plain redirect instead (H5: dial only what was checked).
func TestRedirectHookOnlyInTestBuilds(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	files := func(tags string) string {
		args := []string{"list", "-f", "{{join .GoFiles \" \"}}"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		out, err := exec.Command(goBin, append(args, "anet.dev/anet/pkg/dialer")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list (tags %q): %v\n%s", tags, err, out)
		}
		return string(out)
	}
	cases := []struct {
		name, tags, want, wantNot string
	}{
		{"release build", "", "redirect_release.go", "redirect_anettest.go"},
		{"test build", "anettest", "redirect_anettest.go", "redirect_release.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := files(c.tags)
			if !strings.Contains(got, c.want) || strings.Contains(got, c.wantNot) {
				t.Fatalf("go list files (tags %q) = %s, want %s and not %s", c.tags, got, c.want, c.wantNot)
			}
		})
	}
}
