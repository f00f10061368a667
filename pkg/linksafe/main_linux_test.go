package linksafe

import (
	"testing"

	"anet.dev/anet/internal/testharness"
)

// The permission cases (a run's dirs it made unreadable or unwritable) mean something only
// without root's override: as root the harness re-runs these tests as the unprivileged user.
func TestMain(m *testing.M) { testharness.Main(m, testharness.Options{}) }
