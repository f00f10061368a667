//go:build linux

package seatbelt

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// roleEnv makes the test binary play a part of anet-sandboxd: the check program that runs
// inside the profile, or the limits wrapper.
const roleEnv = "ANET_SEATBELT_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "check":
		// argv: <test binary> seatbelt-check --targets JSON
		var t Targets
		if len(os.Args) < 4 || os.Args[1] != CheckCommand || os.Args[2] != "--targets" {
			fmt.Fprintf(os.Stderr, "check role: bad argv %q\n", os.Args)
			os.Exit(2)
		}
		if err := json.Unmarshal([]byte(os.Args[3]), &t); err != nil {
			fmt.Fprintf(os.Stderr, "check role: %v\n", err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(RunChecks(t))
		os.Exit(0)
	case "wrap":
		var lim RunLimits
		for i, p := range []*uint64{&lim.CPU, &lim.FileSize, &lim.OpenFiles, &lim.Procs} {
			v, _ := strconv.ParseUint(os.Getenv(fmt.Sprintf("ANET_SEATBELT_TEST_LIMIT%d", i)), 10, 64)
			*p = v
		}
		os.Exit(Wrap(lim, os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}
