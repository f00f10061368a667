package integration

// Foundation tests: privilege separation (C3), clean helpers, secrets, control
// socket, supervision, shutdown, the evidence chain, and config refusals.

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/privsep"
)

func readProc(t *testing.T, pid int, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatalf("read /proc/%d/%s: %v", pid, file, err)
	}
	return data
}

func envNames(environ []byte) []string {
	var names []string
	for _, kv := range strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00") {
		if kv == "" {
			continue
		}
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// C3, docs/architecture.md rules 1-2: three processes, the helpers children of anetd, each helper
// with only the environment named in code and no inherited descriptor.
func TestHelpersAreSeparateCleanChildren(t *testing.T) {
	n := newNode(t, nodeOptions{extraEnv: []string{
		"ANET_OPERATOR_SECRET=do-not-pass", "HTTPS_PROXY=http://127.0.0.1:9", "TZ=UTC",
	}})
	n.start()
	anetd := n.cmd.Process.Pid
	// anet-sandboxd also gets the user manager's runtime dir (and its bus, when anetd has
	// one): systemd-run needs them to reach the manager for a run's scope (S6). Neither is a
	// secret, and bwrap's --clearenv keeps both from the run.
	want := map[string][]string{
		"sandboxd": {"LANG", "PATH", "TZ", "XDG_RUNTIME_DIR"},
		"egress":   {"LANG", "PATH", "TZ"},
	}
	dataDir := n.path("data")
	for name, wantEnv := range want {
		t.Run(name, func(t *testing.T) {
			pid := n.helper(name)
			if pid == anetd || pid == 0 {
				t.Fatalf("helper %s pid = %d, anetd = %d: not a separate process", name, pid, anetd)
			}
			if pp := parentPID(t, pid); pp != anetd {
				t.Fatalf("helper %s parent = %d, want anetd %d", name, pp, anetd)
			}
			if got := envNames(readProc(t, pid, "environ")); strings.Join(got, ",") != strings.Join(wantEnv, ",") {
				t.Fatalf("helper %s environment names = %v, want exactly %v", name, got, wantEnv)
			}
			fdDir := fmt.Sprintf("/proc/%d/fd", pid)
			ents, err := os.ReadDir(fdDir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
				if err != nil {
					continue // closed while we looked
				}
				switch e.Name() {
				case "0":
					if target != "/dev/null" {
						t.Errorf("fd 0 = %s, want /dev/null", target)
					}
				case "1", "2":
					if !strings.HasPrefix(target, "pipe:") {
						t.Errorf("fd %s = %s, want the log pipe", e.Name(), target)
					}
				case "3":
					if !strings.HasPrefix(target, "socket:") {
						t.Errorf("fd 3 = %s, want the protocol socket", target)
					}
				default:
					// Only what the helper's Go runtime opens itself (epoll, eventfd, the
					// cgroup cpu files it reads) may be there: nothing inherited from anetd
					// or from whoever started anetd.
					if strings.HasPrefix(target, dataDir) || strings.Contains(target, "control.") {
						t.Errorf("helper %s holds anetd's %s on fd %s", name, target, e.Name())
					} else if !strings.HasPrefix(target, "anon_inode:") && !strings.HasPrefix(target, "/sys/fs/cgroup/") {
						t.Errorf("helper %s has fd %s = %s, which it did not open itself", name, e.Name(), target)
					}
				}
			}
		})
	}
}

func randomKey(t *testing.T) string {
	b := make([]byte, 24)
	rand.Read(b)
	return "sk-ant-api03-" + hex.EncodeToString(b)
}

// F3, C3: a key in the keys file appears in no environment, argv, log line or store row of
// anetd or anet-sandboxd; anetd learns only that the provider has a key.
func TestKeyNeverLeavesEgress(t *testing.T) {
	key := randomKey(t)
	n := newNode(t, nodeOptions{keys: "anthropic: " + key + "\n"})
	n.start()
	st := n.status()
	if strings.Join(st.ProvidersKeyed, ",") != "anthropic" {
		t.Fatalf("providers_with_key = %v, want [anthropic]", st.ProvidersKeyed)
	}
	n.anet("evidence", "note", "something to store")
	statusJSON, _, _ := n.anet("status", "--json")
	surfaces := map[string][]byte{
		"anet status --json": []byte(statusJSON),
	}
	for name, pid := range map[string]int{"anetd": n.cmd.Process.Pid, "sandboxd": n.helper("sandboxd"), "egress": n.helper("egress")} {
		surfaces[name+" environ"] = readProc(t, pid, "environ")
		surfaces[name+" cmdline"] = readProc(t, pid, "cmdline")
	}
	// No core dump can carry the key (or the identity key) to disk: RLIMIT_CORE 0, hard.
	for name, pid := range map[string]int{"anetd": n.cmd.Process.Pid, "sandboxd": n.helper("sandboxd"), "egress": n.helper("egress")} {
		if !coreLimitZero(readProc(t, pid, "limits")) {
			t.Errorf("%s may dump core:\n%s", name, readProc(t, pid, "limits"))
		}
	}
	n.stop()
	surfaces["logs"] = []byte(n.logs.String())
	filepath.Walk(n.path("data"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			surfaces[p] = data
		}
		return nil
	})
	if len(surfaces) < 8 {
		t.Fatalf("too few surfaces inspected: %d", len(surfaces))
	}
	for name, data := range surfaces {
		if bytes.Contains(data, []byte(key)) || bytes.Contains(data, []byte(key[13:])) {
			t.Errorf("the key appears in %s", name)
		}
	}
}

// The control socket refuses a missing and a wrong token, and logs the refusal without it.
func TestControlSocketRefusesBadTokens(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	sock := n.path("run", "anet", "control.sock")
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("runtime dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(n.path("run", "anet", "control.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	wrong := strings.Repeat("ab", 32)
	for _, tc := range []struct{ name, token string }{{"missing", ""}, {"wrong", wrong}} {
		t.Run(tc.name, func(t *testing.T) {
			var st control.Status
			err := control.NewClient(sock, tc.token).Do(ctx(t), "GET", "/v1/status", nil, &st)
			var re *control.RemoteError
			if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || re.Code != "unauthorized" {
				t.Fatalf("status with %s token = %v, want 401 unauthorized", tc.name, err)
			}
			if st.AID != "" {
				t.Fatal("a refused request got an answer")
			}
		})
	}
	// A raw request with no header at all, as a curious local program would send.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	k, _ := c.Read(buf)
	c.Close()
	if !strings.HasPrefix(string(buf[:k]), "HTTP/1.1 401") {
		t.Fatalf("raw request answered %q, want 401", buf[:k])
	}
	logs := n.logs.String()
	if !strings.Contains(logs, "missing token") || !strings.Contains(logs, "wrong token") {
		t.Fatalf("refusals not logged:\n%s", logs)
	}
	if strings.Contains(logs, wrong) {
		t.Fatal("the wrong token was logged")
	}
}

// Supervision: kill -9 of each helper is restarted, and status shows the restart and why.
func TestHelperKilledIsRestarted(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	for _, name := range []string{"sandboxd", "egress"} {
		t.Run(name, func(t *testing.T) {
			old := n.helper(name)
			if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var h privsep.Status
			testkit.WaitFor(t, "helper "+name+" restarted", func() bool {
				for _, h = range n.status().Helpers {
					if h.Name == name && h.State == "running" && h.PID != old {
						return true
					}
				}
				return false
			})
			if h.Restarts != 1 || !strings.Contains(h.LastError, "killed") {
				t.Fatalf("after kill: restarts %d, last error %q; want 1 and the kill", h.Restarts, h.LastError)
			}
			out, _, err := n.anet("status")
			if err != nil || !strings.Contains(out, "restarts 1") || !strings.Contains(out, "signal: killed") {
				t.Fatalf("anet status does not show the restart and its reason:\n%s", out)
			}
		})
	}
}

// docs/architecture.md rule 5: when anetd ends, orderly or not, its helpers end within 2 s.
func TestHelpersEndWithAnetd(t *testing.T) {
	for _, how := range []string{"SIGTERM", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			n := newNode(t, nodeOptions{})
			n.start()
			pids := []int{n.helper("sandboxd"), n.helper("egress")}
			if how == "SIGTERM" {
				n.stop()
				if !strings.Contains(n.logs.String(), "anetd stopping") {
					t.Fatalf("no orderly stop in the log:\n%s", n.logs.String())
				}
			} else {
				n.kill9()
			}
			waitGone(t, 2*time.Second, pids...)
			if how == "SIGTERM" {
				if _, err := os.Stat(n.path("run", "anet", "control.sock")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("control socket left after an orderly stop: %v", err)
				}
			}
		})
	}
}

// B5 (store side): kill -9 of anetd while it appends leaves a chain that verifies; flipping
// one byte of a stored entry makes verify fail naming that entry.
func TestEvidenceChainSurvivesKillAndDetectsTampering(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	cl := n.client()
	var appended atomic.Int64
	var wg sync.WaitGroup
	stopAt := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopAt:
					return
				default:
				}
				err := cl.Do(ctx(t), "POST", "/v1/evidence/note", map[string]string{"text": fmt.Sprintf("writer %d note %d", w, i)}, nil)
				if err != nil {
					return // anetd died under us: expected
				}
				appended.Add(1)
			}
		}(w)
	}
	for appended.Load() < 200 {
		time.Sleep(5 * time.Millisecond)
	}
	n.kill9() // while the writers are mid-append
	close(stopAt)
	wg.Wait()

	n.start()
	out, errOut, err := n.anet("evidence", "verify")
	if err != nil {
		t.Fatalf("verify after kill -9: %v\n%s%s", err, out, errOut)
	}
	var v control.VerifyAnswer
	js, _, _ := n.anet("evidence", "verify", "--json")
	if err := json.Unmarshal([]byte(js), &v); err != nil || !v.OK || v.Entries < 200 {
		t.Fatalf("verify --json = %+v, %v; want ok with >= 200 entries", v, err)
	}
	n.stop()

	// Tamper as someone with the file would: drop the append-only trigger, flip one byte.
	db, err := sql.Open("sqlite", n.path("data", "anet", "anet.db"))
	if err != nil {
		t.Fatal(err)
	}
	const victim = 57
	var details string
	if err := db.QueryRow(`SELECT details FROM evidence WHERE seq = ?`, victim).Scan(&details); err != nil {
		t.Fatal(err)
	}
	flipped := []byte(details)
	i := strings.Index(details, "note") + 1
	flipped[i] ^= 0x01
	if _, err := db.Exec(`DROP TRIGGER evidence_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE evidence SET details = ? WHERE seq = ?`, string(flipped), victim); err != nil {
		t.Fatal(err)
	}
	db.Close()

	n.start()
	out, errOut, err = n.anet("evidence", "verify")
	if err == nil {
		t.Fatalf("verify passed a tampered chain:\n%s", out)
	}
	if !strings.Contains(errOut, "entry "+strconv.Itoa(victim)) {
		t.Fatalf("verify error does not name entry %d:\n%s", victim, errOut)
	}
}

// Bad configuration: anetd refuses to start with a message naming file, line and key.
func TestBadConfigRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name, config, keys string
		keysMode           os.FileMode
		want               []string
	}{
		{"unknown key", "listen: 127.0.0.1:7420\nauto_reply:\n  untrusted: sandbox\n  bogus_key: 1\n", "", 0, []string{"config.yaml:4", "bogus_key"}},
		{"bad value", "auto_reply:\n  trusted: maybe\n", "", 0, []string{"config.yaml:2", "auto_reply.trusted", "direct"}},
		{"keys file 0644", "", "anthropic: sk-ant-x\n", 0o644, []string{"keys.yaml", "chmod 600"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t, nodeOptions{config: tc.config, keys: tc.keys, keysMode: tc.keysMode})
			n.startProcess()
			select {
			case err := <-n.done:
				if err == nil {
					t.Fatal("anetd exited 0 with a bad configuration")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("anetd started with a bad configuration")
			}
			for _, w := range tc.want {
				if !strings.Contains(n.logs.String(), w) {
					t.Errorf("error does not mention %q:\n%s", w, n.logs.String())
				}
			}
			if _, err := os.Stat(n.path("run", "anet", "control.sock")); err == nil {
				t.Error("a control socket exists although start-up was refused")
			}
		})
	}
}

// coreLimitZero reads /proc/PID/limits: "Max core file size  0  0  bytes".
func coreLimitZero(limits []byte) bool {
	for _, line := range strings.Split(string(limits), "\n") {
		if strings.HasPrefix(line, "Max core file size") {
			f := strings.Fields(strings.TrimPrefix(line, "Max core file size"))
			return len(f) >= 2 && f[0] == "0" && f[1] == "0"
		}
	}
	return false
}
