// Package demo is `make demo`: the node's main job in one command on a machine with nothing
// but bubblewrap (no key, no network, no agent CLI). Two throw-away nodes on loopback learn
// each other through the CLI; one sends a task; the other answers it in its sandbox with a
// tiny demo agent that calls the run's endpoint, which forwards to a stand-in model service
// started for the demo only (StandIn). The demo prints each step as it happens, the reply,
// both nodes' evidence for the interaction and the run's usage, then removes everything.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/money"
)

// Task is what node A asks node B.
const Task = "Which command lists the files of a directory, and how do I see hidden ones too?"

// Options say where the programs are and where to print.
type Options struct {
	// BinDir holds anetd, anet, anet-sandboxd with anet-runinit beside it, and anet-egress;
	// anetd and anet-egress must be a demo build (-tags anettest), whose redirect hook
	// reaches the stand-in model.
	BinDir string
	// Agent is the demo agent's program (this program: it acts as the agent when it is run
	// as `claude`); it is copied into the demo's agent directory.
	Agent string
	// Out gets the demo's story.
	Out io.Writer
	// Keep leaves the demo's directory in place (to look at the nodes' logs).
	Keep bool
}

// node is one throw-away anetd with its own directories.
type node struct {
	name string
	dir  string
	env  []string
	addr string
	cmd  *exec.Cmd
	done chan error
	o    *Options
}

// Run runs the demo. Whatever happens, the nodes are stopped and the directory removed
// (unless Keep) before it returns.
func Run(ctx context.Context, o Options) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(o.Out, format+"\n", args...) }
	step := 0
	next := func(format string, args ...any) {
		step++
		say("\n[%d] "+format, append([]any{step}, args...)...)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return errors.New("bubblewrap is not installed; install it (apt-get install bubblewrap) and run make demo again")
	}
	// Short names: a run's endpoint socket lives under the runtime dir, and a unix socket's
	// path holds at most 107 bytes.
	root, err := os.MkdirTemp("", "anet-demo-")
	if err != nil {
		return err
	}
	var nodes []*node
	var standIn *StandIn
	defer func() {
		next("cleaning up")
		for _, n := range nodes {
			n.stop()
			say("    stopped node %s", n.name)
		}
		if standIn != nil {
			standIn.Close()
			say("    stopped the stand-in model service")
		}
		if o.Keep {
			say("    kept %s", root)
			return
		}
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = rerr
		}
		say("    removed %s", root)
	}()

	next("a stand-in model service, for this demo only")
	key := "demo-key-" + randHex(12)
	standIn, err = StartStandIn(filepath.Join(root, "model.sock"), filepath.Join(root, "ca.pem"), key)
	if err != nil {
		return err
	}
	say("    it plays api.anthropic.com on the unix socket %s, with a CA made for the demo;", standIn.Socket)
	say("    it is no model, and no release build of the node can reach it (only a demo build's")
	say("    redirect hook does). Node B's keys file gets the made-up key %s…", key[:12])

	next("two throw-away nodes on loopback, in %s", root)
	agentDir := filepath.Join(root, "agent")
	if err := copyFile(o.Agent, filepath.Join(agentDir, "claude")); err != nil {
		return fmt.Errorf("demo agent: %w", err)
	}
	a, err := newNode(&o, root, "a", "", nil)
	if err != nil {
		return err
	}
	nodes = append(nodes, a)
	b, err := newNode(&o, root, "b",
		"auto_reply:\n  agent: claude\n  untrusted: sandbox\n  api_timeout_seconds: 120\n",
		[]string{
			"PATH=" + agentDir + ":/usr/local/bin:/usr/bin:/bin",
			"SSL_CERT_FILE=" + standIn.CAFile,
			"ANET_TEST_REDIRECTS=api.anthropic.com:443=unix:" + standIn.Socket,
		})
	if err != nil {
		return err
	}
	nodes = append(nodes, b)
	if err := os.WriteFile(filepath.Join(b.dir, "config", "anet", "keys.yaml"), []byte("anthropic: "+key+"\n"), 0o600); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := n.start(ctx); err != nil {
			return err
		}
	}
	sa, err := a.status(ctx)
	if err != nil {
		return err
	}
	sb, err := b.status(ctx)
	if err != nil {
		return err
	}
	say("    node A: %s, peers on %s", sa.AID, sa.ListenAddr)
	say("    node B: %s, peers on %s; its agent is the demo agent, as `claude`", sb.AID, sb.ListenAddr)
	say("    node B's sandbox: %s", sandboxWord(sb))

	next("the nodes learn each other (anet peer add); B does not trust A, so A's task runs in B's sandbox")
	if _, err := a.anet(ctx, "peer", "add", sb.AID, sb.ListenAddr); err != nil {
		return err
	}
	if _, err := b.anet(ctx, "peer", "add", sa.AID, sa.ListenAddr); err != nil {
		return err
	}
	say("    A: anet peer add %s %s", short(sb.AID), sb.ListenAddr)
	say("    B: anet peer add %s %s", short(sa.AID), sa.ListenAddr)

	next("A sends B a task (anet send)")
	out, err := a.anet(ctx, "send", "--to", sb.AID, Task)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(out)
	say("    task: %q", Task)
	say("    interaction %s", id)

	next("B answers it in its sandbox: the demo agent asks the model through the run's endpoint")
	it, err := waitAnswer(ctx, a, b, id, say)
	if err != nil {
		return err
	}

	next("the reply, as A sees it (anet show)")
	if it.Answer.Type != "reply" {
		return fmt.Errorf("B refused the task: %s (see B's anet status)", it.Answer.Code)
	}
	show, err := a.anet(ctx, "show", id)
	if err != nil {
		return err
	}
	say("%s", indent(show))

	next("both nodes' evidence for the interaction (anet evidence show, signed and hash-linked)")
	var completed *control.EvidenceEntry
	for _, n := range []*node{a, b} {
		entries, err := n.evidence(ctx, id)
		if err != nil {
			return err
		}
		say("    node %s:", strings.ToUpper(n.name))
		for _, e := range entries {
			say("      #%d %-15s %s", e.Seq, e.Kind, oneLine(string(e.Details), 110))
			if n == b && e.Kind == "turn_completed" {
				completed = &e
			}
		}
		if _, err := n.anet(ctx, "evidence", "verify"); err != nil {
			return err
		}
		say("      anet evidence verify: every link and signature checks")
	}

	next("the run's usage (from B's turn_completed entry)")
	if err := sayUsage(completed, standIn, say); err != nil {
		return err
	}
	if p := standIn.Problems(); len(p) > 0 {
		return fmt.Errorf("the stand-in model saw: %s", strings.Join(p, "; "))
	}
	return nil
}

func newNode(o *Options, root, name, autoReply string, extraEnv []string) (*node, error) {
	n := &node{name: name, dir: filepath.Join(root, name), o: o}
	dirs := map[string]string{
		"HOME": "home", "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache", "XDG_RUNTIME_DIR": "r",
	}
	n.env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	for k, d := range dirs {
		p := filepath.Join(n.dir, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		n.env = append(n.env, k+"="+p)
	}
	for _, kv := range extraEnv {
		if strings.HasPrefix(kv, "PATH=") {
			n.env[0] = kv
			continue
		}
		n.env = append(n.env, kv)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n.addr = fmt.Sprintf("127.0.0.1:%d", port)
	cfg := fmt.Sprintf("listen: %q\n%s", n.addr, autoReply)
	if err := os.MkdirAll(filepath.Join(n.dir, "config", "anet"), 0o700); err != nil {
		return nil, err
	}
	return n, os.WriteFile(filepath.Join(n.dir, "config", "anet", "config.yaml"), []byte(cfg), 0o600)
}

func (n *node) start(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(n.dir, "anetd.log"))
	if err != nil {
		return err
	}
	n.cmd = exec.Command(filepath.Join(n.o.BinDir, "anetd"), "--helper-dir", n.o.BinDir)
	n.cmd.Env = n.env
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start node %s: %w", n.name, err)
	}
	n.done = make(chan error, 1)
	go func() { n.done <- n.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-n.done:
			n.done <- err
			return fmt.Errorf("node %s stopped during start-up (%v):\n%s", n.name, err, n.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if st, err := n.status(ctx); err == nil && st.HelpersRunning() {
			return nil
		}
	}
	return fmt.Errorf("node %s did not get ready in 60 s:\n%s", n.name, n.logTail())
}

func (n *node) stop() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
}

func (n *node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "anetd.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// anet runs the CLI as the node's operator.
func (n *node) anet(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.o.BinDir, "anet"), args...)
	cmd.Env = n.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("node %s: anet %s: %v: %s", n.name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func (n *node) status(ctx context.Context) (control.Status, error) {
	var st control.Status
	out, err := n.anet(ctx, "status", "--json")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal([]byte(out), &st)
}

// evidence returns the node's chain entries about interaction id.
func (n *node) evidence(ctx context.Context, id string) ([]control.EvidenceEntry, error) {
	out, err := n.anet(ctx, "evidence", "show", "--json")
	if err != nil {
		return nil, err
	}
	var all []control.EvidenceEntry
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		return nil, err
	}
	var mine []control.EvidenceEntry
	for _, e := range all {
		if e.Interaction == id {
			mine = append(mine, e)
		}
	}
	return mine, nil
}

// waitAnswer waits for A to have B's answer, saying what B is doing meanwhile.
func waitAnswer(ctx context.Context, a, b *node, id string, say func(string, ...any)) (control.Interaction, error) {
	deadline := time.Now().Add(3 * time.Minute)
	lastSaid := ""
	for time.Now().Before(deadline) {
		out, err := a.anet(ctx, "show", "--json", id)
		if err != nil {
			return control.Interaction{}, err
		}
		var it control.Interaction
		if err := json.Unmarshal([]byte(out), &it); err != nil {
			return control.Interaction{}, err
		}
		if it.Answer != nil {
			say("    A has B's %s", it.Answer.Type)
			return it, nil
		}
		if st, err := b.status(ctx); err == nil {
			now := "B has the task in its inbox"
			switch {
			case st.AutoReply.RunsActive > 0:
				r := st.AutoReply.Active[0]
				now = fmt.Sprintf("B runs it: run %s, route %s, started %s", r.Run, r.Route, r.Started.Local().Format("15:04:05"))
			case lastSaid != "" && lastSaid != now:
				now = "B's run ended; its reply is on the way to A"
			}
			if now != lastSaid {
				say("    %s", now)
				lastSaid = now
			}
		}
		select {
		case <-ctx.Done():
			return control.Interaction{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return control.Interaction{}, fmt.Errorf("no answer from B in 3 minutes; B's log:\n%s", b.logTail())
}

// sayUsage prints the run's usage as B recorded it in its chain.
func sayUsage(completed *control.EvidenceEntry, standIn *StandIn, say func(string, ...any)) error {
	if completed == nil {
		return errors.New("B's chain has no turn_completed entry for the interaction")
	}
	var d struct {
		Counted bool         `json:"counted"`
		Route   string       `json:"route"`
		Cgroup  string       `json:"cgroup"`
		Cost    money.Micros `json:"cost_micros"`
		Usage   struct {
			Model struct {
				Requests      int64 `json:"requests"`
				Forwarded     int64 `json:"forwarded"`
				BytesUpstream int64 `json:"bytes_upstream"`
				BytesToAgent  int64 `json:"bytes_to_agent"`
				Upstream      struct {
					Statuses map[string]int64 `json:"statuses"`
				} `json:"upstream"`
			} `json:"model"`
			Tunnel struct {
				TunnelsOpened int `json:"tunnels_opened"`
			} `json:"tunnel"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(completed.Details, &d); err != nil {
		return fmt.Errorf("turn_completed details: %w", err)
	}
	m := d.Usage.Model
	say("    route %s, counted against B's daily run budget: %v, limits: %s", d.Route, d.Counted, d.Cgroup)
	var statuses []string
	for code, n := range m.Upstream.Statuses {
		statuses = append(statuses, fmt.Sprintf("%s×%d", code, n))
	}
	say("    model requests: %d through the endpoint, %d forwarded upstream (answered %s)", m.Requests, m.Forwarded, strings.Join(statuses, ", "))
	say("    bytes: %d sent upstream, %d back to the agent; tunnels opened: %d", m.BytesUpstream, m.BytesToAgent, d.Usage.Tunnel.TunnelsOpened)
	say("    cost, at the pinned model's prices: %s", d.Cost)
	say("    the stand-in model got %d request(s), each with B's key, none with the run's placeholder", standIn.Requests())
	return nil
}

func sandboxWord(st control.Status) string {
	sb := st.AutoReply.Sandbox
	switch {
	case !sb.Probed:
		return "not probed yet"
	case sb.OK:
		return "available, limits " + sb.Limits
	}
	return "unavailable: " + sb.Code + " (" + sb.Detail + ")"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func short(aid string) string {
	if len(aid) > 16 {
		return aid[:16] + "…"
	}
	return aid
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func oneLine(s string, n int) string {
	return clip(strings.Join(strings.Fields(s), " "), n)
}
