package guestimage

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestExtractVmlinuxRefusesNonKernels: only a bzImage with a PVH kernel inside is booted (V1).
func TestExtractVmlinuxRefusesNonKernels(t *testing.T) {
	if _, err := extractVmlinux(context.Background(), []byte("not a kernel")); err == nil || !strings.Contains(err.Error(), "HdrS") {
		t.Fatalf("extractVmlinux(garbage) = %v, want a boot-header error", err)
	}
	// An ELF without the PVH note (any ordinary program) is refused with the reason.
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPVH(b); err == nil || !strings.Contains(err.Error(), "PVH") {
		t.Fatalf("checkPVH(/bin/true) = %v, want a missing-PVH error", err)
	}
}
