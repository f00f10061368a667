package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/control"
)

// syncBuffer collects a process's output while tests read it.
type syncBuffer = testkit.Buffer

// testNode is one anetd with its own XDG tree.
type testNode struct {
	t    testing.TB
	root string
	env  []string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan error
}

type nodeOptions struct {
	config   string      // config.yaml content; "" = none
	keys     string      // keys.yaml content; "" = none
	keysMode os.FileMode // default 0600
	extraEnv []string
}

func newNode(t testing.TB, o nodeOptions) *testNode {
	t.Helper()
	// Not t.TempDir(): its name carries the test's name, and the control socket's path
	// must stay under the 107 bytes a unix socket address allows.
	root, err := os.MkdirTemp("", "an")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	n := &testNode{t: t, root: root}
	dirs := map[string]string{
		"HOME":            filepath.Join(root, "home"),
		"XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_DATA_HOME":   filepath.Join(root, "data"),
		"XDG_CACHE_HOME":  filepath.Join(root, "cache"),
		"XDG_RUNTIME_DIR": filepath.Join(root, "run"),
	}
	n.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	for k, v := range dirs {
		if err := os.MkdirAll(v, 0o700); err != nil {
			t.Fatal(err)
		}
		n.env = append(n.env, k+"="+v)
	}
	n.env = append(n.env, o.extraEnv...)
	cfgDir := filepath.Join(dirs["XDG_CONFIG_HOME"], "anet")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if o.config == "" {
		// The peer listener's default port (7420) would collide between nodes and with
		// other test runs on the machine: every test node takes a free port instead
		// (config refuses port 0, so the port is picked here).
		o.config = fmt.Sprintf("listen: \"127.0.0.1:%d\"\n", freePort(t))
	}
	if o.config != "" {
		if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(o.config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if o.keys != "" {
		mode := o.keysMode
		if mode == 0 {
			mode = 0o600
		}
		p := filepath.Join(cfgDir, "keys.yaml")
		if err := os.WriteFile(p, []byte(o.keys), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	return n
}

func (n *testNode) path(parts ...string) string {
	return filepath.Join(append([]string{n.root}, parts...)...)
}

// start runs anetd and waits until `anet status` answers.
func (n *testNode) start() {
	n.t.Helper()
	n.startProcess()
	n.waitReady()
}

func (n *testNode) startProcess() {
	n.t.Helper()
	n.logs = &syncBuffer{}
	n.cmd = exec.Command(testharness.Bin(n.t, "anetd"))
	n.cmd.Env = n.env
	n.cmd.Stdout = n.logs
	n.cmd.Stderr = n.logs
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.done = make(chan error, 1)
	cmd, done := n.cmd, n.done
	go func() { done <- cmd.Wait() }()
	n.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
			}
		}
		if n.t.Failed() {
			n.t.Logf("anetd log:\n%s", n.logs.String())
		}
	})
}

func (n *testNode) waitReady() {
	n.t.Helper()
	ready := testkit.Until(testkit.Wait, func() bool {
		select {
		case err := <-n.done:
			n.t.Fatalf("anetd exited during start-up: %v\n%s", err, n.logs.String())
		default:
		}
		st, err := n.tryStatus()
		return err == nil && st.HelpersRunning()
	})
	if !ready {
		n.t.Fatalf("anetd not ready after %v:\n%s", testkit.Wait, n.logs.String())
	}
}

// anet runs the CLI with the node's environment.
func (n *testNode) anet(args ...string) (string, string, error) {
	cmd := exec.Command(testharness.Bin(n.t, "anet"), args...)
	cmd.Env = n.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (n *testNode) tryStatus() (control.Status, error) {
	var st control.Status
	out, errOut, err := n.anet("status", "--json")
	if err != nil {
		return st, fmt.Errorf("anet status: %v: %s", err, errOut)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, err
	}
	return st, nil
}

func (n *testNode) status() control.Status {
	n.t.Helper()
	st, err := n.tryStatus()
	if err != nil {
		n.t.Fatal(err)
	}
	return st
}

func (n *testNode) helper(name string) (pid int) {
	n.t.Helper()
	for _, h := range n.status().Helpers {
		if h.Name == name {
			return h.PID
		}
	}
	n.t.Fatalf("no helper %s in status", name)
	return 0
}

func (n *testNode) client() *control.Client {
	n.t.Helper()
	tok, err := control.ReadToken(n.path("run", "anet", "control.token"))
	if err != nil {
		n.t.Fatal(err)
	}
	return control.NewClient(n.path("run", "anet", "control.sock"), tok)
}

// stop sends SIGTERM and waits for exit.
func (n *testNode) stop() {
	n.t.Helper()
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		n.t.Fatal("anetd did not stop within 20 s of SIGTERM")
	}
}

// kill9 kills anetd without warning.
func (n *testNode) kill9() {
	n.t.Helper()
	n.cmd.Process.Kill()
	<-n.done
}

func procAlive(pid int) bool {
	// A zombie is gone for our purposes: it holds nothing and runs nothing.
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func parentPID(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

func waitGone(t *testing.T, within time.Duration, pids ...int) {
	t.Helper()
	var alive []int
	gone := testkit.Until(within, func() bool {
		alive = alive[:0]
		for _, p := range pids {
			if procAlive(p) {
				alive = append(alive, p)
			}
		}
		return len(alive) == 0
	})
	if !gone {
		t.Fatalf("processes %v still alive %s later", alive, within)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// manualReplies is a node whose operator answers every task by hand: with auto-reply on, a
// fresh node without the agent installed refuses a stranger's task sandbox_unavailable (F1)
// before anyone could reply to it.
func manualReplies(t testing.TB) nodeOptions {
	return nodeOptions{config: fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n  trusted: off\n  untrusted: off\n", freePort(t))}
}
