package attack

import (
	"os"
	"strings"
	"testing"
)

// TestVMChecksSeeTheHost: run on the host itself, the micro-VM backend's two checks fail,
// which is what they must do wherever the host shows through: this process is in view (with
// its own start time), and the host has a network device besides lo (V1).
func TestVMChecksSeeTheHost(t *testing.T) {
	start, err := ProcessStart(os.Getpid())
	if err != nil || start == "" {
		t.Fatalf("ProcessStart(self) = %q, %v", start, err)
	}
	if err := checkHostProcess(os.Getpid(), start); err == nil || !strings.Contains(err.Error(), "visible") {
		t.Errorf("checkHostProcess(self) = %v, want visible", err)
	}
	// The same number with another start time is another process: not the host's.
	if err := checkHostProcess(os.Getpid(), start+"1"); err != nil {
		t.Errorf("checkHostProcess(self, other start) = %v, want nil", err)
	}
	if err := checkHostProcess(0, ""); err == nil {
		t.Error("checkHostProcess with no host process named passed")
	}
	b, _ := os.ReadFile("/proc/net/dev")
	if strings.Count(string(b), ":") < 2 {
		t.Fatalf("this host has no network device but lo (%q): the test cannot see the check fail", b)
	}
	if err := checkOnlyLoopback(); err == nil {
		t.Error("checkOnlyLoopback passed on the host, which has more than lo")
	}
	for name, want := range map[string]string{CheckNetDevices: "netns_failed", CheckHostProcess: "sandbox_start_failed"} {
		if c := probeFailed(name, "x"); string(c.Code) != want || c.Requirement != "V1" {
			t.Errorf("probeFailed(%s) = code %s requirement %s, want %s V1", name, c.Code, c.Requirement, want)
		}
	}
}
