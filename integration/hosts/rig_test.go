//go:build anettest && linux

package hosts

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
)

// TestHosts boots each guest once and runs every scenario of its directory in it, then reports
// each scenario as a subtest (TestHosts/SUITE/NAME) from what it left in the share (C4, S1–S8,
// L1, L2, A1–A3, U3, F1, F2): out/NAME.rc is the result, out/NAME.log what it printed,
// out/NAME.journal the guest's journal while it ran. ANET_HOSTS_SCENARIO=NAME runs that
// scenario alone, in its guest, and =SUITE that guest's scenarios; the other guest does not boot.
func TestHosts(t *testing.T) {
	picked := scenarios(t)
	logs := logDir(t)
	for _, s := range suites {
		names := picked[s.name]
		if len(names) == 0 {
			continue
		}
		t.Run(s.name, func(t *testing.T) { runSuite(t, s, names, filepath.Join(logs, s.name)) })
	}
}

// runSuite boots s's guest once for names and reports each of them.
func runSuite(t *testing.T, s suite, names []string, logs string) {
	share := filepath.Join(logs, "share")
	prepareShare(t, s, share, names)
	t.Logf("hosts rig: %s: scenarios %s; logs in %s", s.what, strings.Join(names, " "), logs)

	g := bootGuest(t, s, share, filepath.Join(logs, "console.log"))
	t.Logf("hosts rig: %s: %s; boot to the rig %s, whole run %s", s.what, g.accelNote, g.boot.Round(100*time.Millisecond), g.total.Round(100*time.Millisecond))
	if b, err := os.ReadFile(filepath.Join(share, "out", "guest.txt")); err == nil {
		t.Logf("hosts rig: guest:\n%s", strings.TrimSpace(string(b)))
	}
	out := filepath.Join(share, "out")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			log := readTail(filepath.Join(out, name+".log"), 0)
			for _, line := range strings.Split(log, "\n") {
				if strings.HasPrefix(line, "rig: time:") || strings.HasPrefix(line, "rig: scenario ") || strings.HasPrefix(line, "rig: note:") {
					t.Log(strings.TrimPrefix(line, "rig: "))
				}
			}
			rcText, err := os.ReadFile(filepath.Join(out, name+".rc"))
			if err != nil {
				t.Fatalf("scenario %s did not finish: the guest stopped before it wrote %s.rc\n--- its log:\n%s\n--- the console's tail (all: %s):\n%s",
					name, name, log, g.console, readTail(g.console, 60))
			}
			rc, err := strconv.Atoi(strings.TrimSpace(string(rcText)))
			if err != nil {
				t.Fatalf("scenario %s: exit status %q: %v", name, rcText, err)
			}
			if rc != 0 {
				jpath := filepath.Join(out, name+".journal")
				t.Fatalf("scenario %s failed (exit %d)\n--- its log (%s):\n%s\n--- the guest's journal while it ran, last 80 lines (all: %s; the boot's tail: %s):\n%s",
					name, rc, filepath.Join(out, name+".log"), log, jpath, filepath.Join(out, "journal.log"), readTail(jpath, 80))
			}
		})
	}
}

// scenarios are the scenario names of each suite (DIR/*.sh, in name order: the order run.sh
// runs them), or the one ANET_HOSTS_SCENARIO names (a suite's name: all of that suite's). A
// name in two suites' dirs is an error: SCENARIO=NAME must pick one guest.
func scenarios(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var all []string
	where := map[string]string{}
	for _, s := range suites {
		files, err := filepath.Glob(filepath.Join(s.dir, "*.sh"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s/*.sh beside the test (%v)", s.dir, err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".sh")
			if other, dup := where[name]; dup {
				t.Fatalf("scenario %s is in both %s and %s", name, other, s.dir)
			}
			where[name] = s.dir
			out[s.name] = append(out[s.name], name)
			all = append(all, name)
		}
		slices.Sort(out[s.name])
	}
	if one := os.Getenv(envScenario); one != "" {
		if names, ok := out[one]; ok {
			return map[string][]string{one: names}
		}
		for suite, names := range out {
			if slices.Contains(names, one) {
				return map[string][]string{suite: {one}}
			}
		}
		slices.Sort(all)
		t.Fatalf("%s=%s: no such scenario; there are %s", envScenario, one, strings.Join(all, " "))
	}
	return out
}

// envScenario picks one scenario (make host-test SCENARIO=NAME sets it).
const envScenario = "ANET_HOSTS_SCENARIO"

// logDir is where a run's share, console and results stay after the test, for a look:
// ANET_HOSTS_LOGS, or /tmp/anet-hosts-USER. Each run starts it afresh.
func logDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ANET_HOSTS_LOGS")
	if dir == "" {
		name := strconv.Itoa(os.Getuid())
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
		dir = filepath.Join("/tmp", "anet-hosts-"+name)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("clear the log dir: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("log dir: %v", err)
	}
	return dir
}

// prepareShare lays out what s's guest mounts at /rig: run.sh and lib.sh, its scenarios (in
// scenarios/ there, whichever dir they come from), the two packages, rig.env (what run.sh
// reads) and an empty out/.
func prepareShare(t *testing.T, s suite, share string, names []string) {
	t.Helper()
	prep := testharness.PreparedDir()
	if prep == "" {
		t.Fatal("the packages were not built (testharness.Options.Prepare did not run)")
	}
	vb, err := os.ReadFile(filepath.Join(prep, versionFile))
	if err != nil {
		t.Fatalf("the package version: %v", err)
	}
	v := strings.TrimSpace(string(vb))
	for _, d := range []string{"scenarios", "debs", "out", toolsDir} {
		if err := os.MkdirAll(filepath.Join(share, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyInto(t, "run.sh", filepath.Join(share, "run.sh"))
	copyInto(t, "lib.sh", filepath.Join(share, "lib.sh"))
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.sh"))
	for _, f := range files {
		copyInto(t, f, filepath.Join(share, "scenarios", filepath.Base(f)))
	}
	for _, pv := range []string{v, v + upgradeSuffix} {
		copyInto(t, filepath.Join(prep, debDir, debName(pv)), filepath.Join(share, "debs", debName(pv)))
	}
	for _, b := range []string{benchName, goPid1Name, standinName} {
		copyInto(t, filepath.Join(prep, toolsDir, b), filepath.Join(share, toolsDir, b))
	}
	if slices.Contains(names, claudeScenario) { // 370 MB: only for the guest that runs it
		copyInto(t, claudeProgram(t), filepath.Join(share, toolsDir, claudeName))
	}
	if slices.Contains(names, benchScenario) {
		copyInto(t, filepath.Join(prep, toolsDir, srtTar), filepath.Join(share, toolsDir, srtTar))
		copyInto(t, agentsProgram(t, "node/bin/node"), filepath.Join(share, toolsDir, nodeName))
	}
	one := "" // run.sh runs every scenario in the share, or this one
	if os.Getenv(envScenario) != "" && len(names) == 1 {
		one = names[0]
	}
	env := fmt.Sprintf("ANET_RIG_SCENARIO=%s\nANET_RIG_DEB=%s\nANET_RIG_DEB_UPGRADE=%s\nANET_RIG_VERSION=%s\nANET_RIG_UPGRADE_VERSION=%s\n",
		shq(one), shq(debName(v)), shq(debName(v+upgradeSuffix)), shq(v), shq(v+upgradeSuffix))
	if err := os.WriteFile(filepath.Join(share, "rig.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
}

// claudeScenario is the scenario that runs the real claude CLI in the guest.
const claudeScenario = "j-claude"

// benchScenario is the launch bench, whose sandbox-runtime anchor needs Node.
const benchScenario = "i-launch-bench"

// claudeProgram is the pinned claude CLI the integration tests run (.ci/npm-agents.sh installs
// it): its native program, which j-claude installs in the guest as npm would.
func claudeProgram(t *testing.T) string { return agentsProgram(t, "bin/claude") }

// agentsProgram is rel in the test agents' prefix (.ci/npm-agents.sh), resolved. Without it
// the rig fails here, loudly, naming the command that installs it.
func agentsProgram(t *testing.T, rel string) string {
	t.Helper()
	prefix := os.Getenv("ANET_TEST_AGENTS_DIR")
	if prefix == "" {
		prefix = "/opt/anet-test-agents"
	}
	p, err := filepath.EvalSymlinks(filepath.Join(prefix, rel))
	if err != nil {
		t.Fatalf("%s of the test agents for the guest: %v (install them as root: bash .ci/npm-agents.sh)", rel, err)
	}
	return p
}

// shq quotes s for a shell's single quotes.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func copyInto(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("share: %v", err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatalf("share: %v", err)
	}
}

// readTail is the last n lines of a file (all with n 0), or what went wrong reading it.
func readTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
