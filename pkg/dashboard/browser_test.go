//go:build anettest

package dashboard_test

// The dashboard end to end: two real anetd (A serves the dashboard, B is its peer), the real
// CLI, and a real headless Chromium driven over the DevTools protocol (chromedp). B sends A a
// task full of markup, scripts and a bidi override; the browser logs in with the one-time
// URL of `anet dashboard`, loads every page, replies by hand and trusts B through the
// confirmation steps, watches a run of B's next task appear live on /runs, verifies the
// chain, and is refused where it must be: a replayed login, a rebinding host name, a
// cross-site form, a form without the CSRF token.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"anet.dev/anet/internal/testharness"
	"anet.dev/anet/internal/testkit"
	"anet.dev/anet/pkg/autoreply"
	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/identity"
	"anet.dev/anet/pkg/store"
)

func TestMain(m *testing.M) {
	testharness.Main(m, testharness.Options{Builds: testharness.Binaries})
}

// chromium is Debian's package; the test fails without it rather than pass unseen.
const chromium = "/usr/bin/chromium"

// The task B sends: every way its text could run in a page, and a bidi override.
var hostileTask = strings.Join([]string{
	`<script>window.__pwned=1</script>`,
	`<img src=x onerror="window.__pwned=1">`,
	`javascript:window.__pwned=1`,
	`</textarea><script>window.__pwned=1</script>`,
	"report\u202eexe.pdf",
}, "\n")

// node is one anetd with its own XDG tree.
type node struct {
	t    *testing.T
	root string
	env  []string
	logs *testkit.Buffer
	cmd  *exec.Cmd
	done chan error
}

func newNode(t *testing.T, cfg string, path string) *node {
	t.Helper()
	// Not t.TempDir(): the control socket's path must fit in a unix socket address.
	root, err := os.MkdirTemp("", "an")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	n := &node{t: t, root: root, env: []string{"PATH=" + path, "LANG=C.UTF-8"}}
	for k, v := range map[string]string{"HOME": "home", "XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache", "XDG_RUNTIME_DIR": "run"} {
		if err := os.MkdirAll(filepath.Join(root, v), 0o700); err != nil {
			t.Fatal(err)
		}
		n.env = append(n.env, k+"="+filepath.Join(root, v))
	}
	if err := os.MkdirAll(filepath.Join(root, "config", "anet"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "config", "anet", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) getenv(k string) string {
	for _, kv := range n.env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

func (n *node) paths() config.Paths {
	n.t.Helper()
	p, err := config.DefaultPaths(n.getenv)
	if err != nil {
		n.t.Fatal(err)
	}
	return p
}

// identity makes the node's key before anetd does (it keeps it), so the test knows its aid.
func (n *node) identity() *identity.Identity {
	n.t.Helper()
	p := n.paths()
	if err := config.EnsurePrivateDir(p.DataDir); err != nil {
		n.t.Fatal(err)
	}
	id, _, err := identity.LoadOrCreate(p.IdentityKey())
	if err != nil {
		n.t.Fatal(err)
	}
	return id
}

func (n *node) start() {
	n.t.Helper()
	n.logs = &testkit.Buffer{}
	n.cmd = exec.Command(testharness.Bin(n.t, "anetd"))
	n.cmd.Env, n.cmd.Stdout, n.cmd.Stderr = n.env, n.logs, n.logs
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	n.done = make(chan error, 1)
	cmd, done, t := n.cmd, n.done, n.t
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("anetd %s log:\n%s", n.root, n.logs.String())
		}
	})
	testkit.WaitFor(n.t, "anetd ready", func() bool {
		select {
		case err := <-done:
			n.t.Fatalf("anetd exited: %v\n%s", err, n.logs.String())
		default:
		}
		var st control.Status
		out, _, err := n.anet("status", "--json")
		return err == nil && json.Unmarshal([]byte(out), &st) == nil && st.HelpersRunning()
	})
}

func (n *node) anet(args ...string) (string, string, error) {
	cmd := exec.Command(testharness.Bin(n.t, "anet"), args...)
	cmd.Env = n.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (n *node) mustAnet(args ...string) string {
	n.t.Helper()
	out, errOut, err := n.anet(args...)
	if err != nil {
		n.t.Fatalf("anet %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (n *node) jsonOf(out any, args ...string) {
	n.t.Helper()
	if err := json.Unmarshal([]byte(n.mustAnet(append(args, "--json")...)), out); err != nil {
		n.t.Fatalf("anet %s --json: %v", strings.Join(args, " "), err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// artifacts is where the screenshots go: $ANET_ARTIFACTS, else the test's temp dir.
func artifacts(t *testing.T) string {
	dir := os.Getenv("ANET_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("ANET_ARTIFACTS: %v (it must be writable by the user the tests run as: %s when they start as root)", err, testharness.User)
	}
	return dir
}

// U1, C4, K1, K2: the dashboard of a real node in a real browser: peers' text inert on every
// page, the login, Host, Origin and CSRF rules held by the browser itself, the live runs, the
// spend and the evidence as the node has them.
func TestDashboardInChromiumU1C4(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s: %v: the dashboard's browser test needs Debian's chromium (apt-get install -y chromium, or make test-deps)", chromium, err)
	}
	shots := artifacts(t)

	// A's agent for B's trusted task: `claude` on anetd's PATH, slow enough to be seen live.
	agentDir := filepath.Join(t.TempDir(), "agent")
	os.MkdirAll(agentDir, 0o755)
	agent := "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'stand-in 1.0'; exit 0; }\nsleep 8\n" +
		`printf '{"type":"result","subtype":"success","is_error":false,"result":"answered while you watched"}\n'` + "\n"
	if err := os.WriteFile(filepath.Join(agentDir, "claude"), []byte(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(agentDir), 0o755)
	dashPort := freePort(t)
	dashHost := "127.0.0.1:" + strconv.Itoa(dashPort)
	a := newNode(t, fmt.Sprintf("listen: \"127.0.0.1:%d\"\ndashboard:\n  listen: %q\nauto_reply:\n  untrusted: off\n  trusted: direct\n", freePort(t), dashHost),
		agentDir+":/usr/local/bin:/usr/bin:/bin")
	b := newNode(t, fmt.Sprintf("listen: \"127.0.0.1:%d\"\nauto_reply:\n  trusted: off\n  untrusted: off\n", freePort(t)), "/usr/local/bin:/usr/bin:/bin")
	idA, idB := a.identity(), b.identity()

	// A's chain already holds two counted runs of B's (K1, B5): written as the engine writes
	// them, signed with A's key, so /spend has something to draw and the chain verifies.
	st, err := store.Open(a.paths().Store())
	if err != nil {
		t.Fatal(err)
	}
	l := autoreply.Ledger{Store: st, Signer: idA}
	for i, cost := range []int64{420_000, 130_000} {
		if err := l.Completed(context.Background(), idB.AID(), "ix-earlier-"+strconv.Itoa(i), true, map[string]any{"run": "r-earlier", "model": "claude-haiku-5-5", "cost_micros": cost}, nil); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	a.start()
	b.start()
	var stA, stB control.Status
	a.jsonOf(&stA, "status")
	b.jsonOf(&stB, "status")
	if stA.Dashboard != dashHost {
		t.Fatalf("A's status says the dashboard is on %q, want %s", stA.Dashboard, dashHost)
	}
	b.mustAnet("peer", "add", idA.AID(), stA.ListenAddr)
	a.mustAnet("peer", "add", idB.AID(), stB.ListenAddr)
	task := strings.TrimSpace(b.mustAnet("send", "--to", idA.AID(), hostileTask))
	testkit.WaitFor(t, "B's task in A's inbox", func() bool {
		var in []control.Interaction
		a.jsonOf(&in, "inbox")
		return len(in) == 1 && in[0].Text == hostileTask
	})
	a.mustAnet("evidence", "note", "operator note: "+hostileTask)

	// The browser: a throw-away profile, nothing from the network, evil.example resolving to
	// the dashboard's own address (a DNS rebinding, as a hostile page would arrange it).
	profile, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1000),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 4*time.Minute)
	defer cancelTimeout()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	// get runs one action for its value.
	get := func(what string, a any) any {
		t.Helper()
		var v any
		var err error
		switch a := a.(type) {
		case chromedp.Action[string]:
			v, err = chromedp.Run(bctx, a)
		case chromedp.Action[bool]:
			v, err = chromedp.Run(bctx, a)
		case chromedp.Action[int]:
			v, err = chromedp.Run(bctx, a)
		case chromedp.Action[[]byte]:
			v, err = chromedp.Run(bctx, a)
		case chromedp.Action[*network.Response]:
			v, err = chromedp.Run(bctx, a)
		default:
			t.Fatalf("get %s: action of type %T", what, a)
		}
		if err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
		return v
	}
	// navigate loads a page and returns its HTTP status.
	navigate := func(u string) int64 {
		t.Helper()
		resp := get("navigate "+u, chromedp.NavigateResponse(u)).(*network.Response)
		if resp == nil {
			t.Fatalf("browser: navigate %s: no response", u)
		}
		return resp.Status
	}
	base := "http://" + dashHost
	shot := func(name string) {
		t.Helper()
		png := get("screenshot "+name, chromedp.FullScreenshot(100)).([]byte)
		p := filepath.Join(shots, name+".png")
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
	// inert: nothing of the peer's text ran, was parsed as markup or became a link.
	inert := func(page string) {
		t.Helper()
		pwned := get("window.__pwned", chromedp.Evaluate[bool](`typeof window.__pwned !== "undefined"`)).(bool)
		scripts := get("scripts", chromedp.Evaluate[int](`[...document.scripts].filter(s => s.src !== location.origin + "/static/dashboard.js").length`)).(int)
		images := get("images", chromedp.Evaluate[int](`document.images.length`)).(int)
		links := get("links", chromedp.Evaluate[int](`[...document.links].filter(a => !a.href.startsWith(location.origin + "/")).length`)).(int)
		if pwned || scripts != 0 || images != 0 || links != 0 {
			t.Fatalf("%s: window.__pwned set: %v; foreign scripts %d, images %d, links off the dashboard %d", page, pwned, scripts, images, links)
		}
	}
	text := func(sel string) string {
		t.Helper()
		return get("text of "+sel, chromedp.Text(chromedp.CSS(sel))).(string)
	}
	visible := func(page, sel string, want ...string) {
		t.Helper()
		got := text(sel)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: %s shows %q, want it to show %q as text", page, sel, got, w)
			}
		}
	}
	wait := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	click := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

	// Log in with the one-time URL.
	var login control.DashboardLogin
	a.jsonOf(&login, "dashboard")
	if !strings.HasPrefix(login.URL, base+"/login?code=") {
		t.Fatalf("anet dashboard = %+v, want a login URL on %s", login, base)
	}
	do("log in", chromedp.Navigate(login.URL), wait("#warnings"))
	if where := get("location", chromedp.Location()).(string); where != base+"/" {
		t.Fatalf("after login the browser is at %s, want %s/", where, base)
	}
	inert("/")
	visible("/", "main", idA.AID(), "Helpers", "sandboxd", "egress", "running", "Sandbox", "Budget today", "Last wall proof")
	shot("overview")

	// A replayed login URL is refused, in the browser too.
	if status := navigate(login.URL); status != http.StatusForbidden || !strings.Contains(text("#message"), "works once") {
		t.Fatalf("a replayed login = %d %q, want 403 saying it works once", status, text("#message"))
	}

	// The interactions, in and out.
	do("interactions", chromedp.Navigate(base+"/interactions"), wait("#in table"))
	inert("/interactions")
	visible("/interactions", "#in", `<script>window.__pwned=1</script>`, `<img src=x onerror="window.__pwned=1">`, `report\u202eexe.pdf`)
	shot("interactions")

	// The task itself: every payload as text, the override as an escape.
	do("interaction", chromedp.Navigate(base+"/interactions/"+task), wait("pre.task"))
	inert("/interactions/" + task)
	if shown, want := text("pre.task"), strings.ReplaceAll(hostileTask, "\u202e", `\u202e`); shown != want {
		t.Fatalf("the task shows as %q, want exactly %q", shown, want)
	}
	shot("interaction")

	// A cross-site form (another origin on this machine: the same site, so the SameSite
	// cookie goes with it) cannot trust B: the Origin check refuses it, and it has no CSRF
	// token.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id=f method=post action="%s/trust"><input name=aid value="%s"><input name=confirm value=yes></form><script>document.getElementById("f").submit()</script>`, base, idB.AID())
	}))
	defer evil.Close()
	do("cross-site form", chromedp.Navigate(evil.URL), wait("#message"))
	if where, msg := get("location", chromedp.Location()).(string), text("#message"); where != base+"/trust" || !strings.Contains(msg, "did not come from") {
		t.Fatalf("a cross-site POST ended at %s saying %q, want the dashboard's refusal naming the Origin", where, msg)
	}
	var trust []control.TrustEntry
	a.jsonOf(&trust, "trust", "list")
	if len(trust) != 0 {
		t.Fatalf("after the cross-site form, A trusts %+v", trust)
	}

	// A rebinding host name reaching the dashboard's address is refused.
	_, port, _ := net.SplitHostPort(dashHost)
	if status := navigate("http://evil.example:" + port + "/"); status != http.StatusMisdirectedRequest {
		t.Fatalf("the dashboard under a rebinding name answered %d, want 421", status)
	}

	// With the browser's own session (read over DevTools: the page cannot read it) but no
	// CSRF token, or another Origin, a POST is refused too.
	do("back home", chromedp.Navigate(base+"/"), wait("#warnings"))
	cookies, err := chromedp.Run(bctx, func(ctx context.Context, tg *chromedp.Target) ([]*network.Cookie, error) {
		res, err := cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
		return res.Cookies, err
	})
	if err != nil || len(cookies) != 1 || !cookies[0].HTTPOnly || cookies[0].SameSite != network.CookieSameSiteStrict {
		t.Fatalf("cookies = %+v, %v, want the one HttpOnly, SameSite=Strict session cookie", cookies, err)
	}
	post := func(origin string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/trust", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(base, url.Values{"aid": {idB.AID()}, "confirm": {"yes"}}); got != http.StatusForbidden {
		t.Fatalf("a POST without the CSRF token = %d, want 403", got)
	}
	if got := post("http://evil.example", url.Values{"aid": {idB.AID()}, "confirm": {"yes"}}); got != http.StatusForbidden {
		t.Fatalf("a POST from Origin http://evil.example = %d, want 403", got)
	}
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Host = "evil.example:" + port
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("Host evil.example:%s = %v, %v, want 421", port, resp, err)
	}

	// Reply by hand with the break-out text: the confirmation shows it, inert, in its
	// textarea; confirming sends exactly it to B.
	reply := "You wrote: " + `</textarea><script>window.__pwned=1</script>` + " - noted."
	do("reply form", chromedp.Navigate(base+"/interactions/"+task), wait("#reply-text"),
		chromedp.SendKeys(chromedp.CSS("#reply-text"), reply), click("#reply"), wait("#confirm-text"))
	inert("reply confirmation")
	if inBox := get("confirmation text", chromedp.Value(chromedp.CSS("#confirm-text"))).(string); inBox != reply {
		t.Fatalf("the confirmation's textarea holds %q, want %q", inBox, reply)
	}
	shot("confirm-reply")
	var in []control.Interaction
	a.jsonOf(&in, "inbox")
	if in[0].State != "new" {
		t.Fatalf("the task is %s before the reply was confirmed, want new", in[0].State)
	}
	do("send reply", click("#confirm"), wait("#message"))
	visible("reply sent", "#message", "queued")
	testkit.WaitFor(t, "B has A's reply", func() bool {
		var it control.Interaction
		b.jsonOf(&it, "show", task)
		return it.Answer != nil && it.Answer.Text == reply
	})

	// Trust B, through its confirmation.
	do("trust", chromedp.Navigate(base+"/interactions/"+task), wait("#trust"), click("#trust"), wait("#confirm"))
	visible("trust confirmation", "main", idB.AID(), "direct", "as your own user")
	shot("confirm-trust")
	a.jsonOf(&trust, "trust", "list")
	if len(trust) != 0 {
		t.Fatalf("A trusts %+v before the confirmation", trust)
	}
	do("confirm trust", click("#confirm"), wait("#message"))
	a.jsonOf(&trust, "trust", "list")
	if len(trust) != 1 || trust[0].AID != idB.AID() {
		t.Fatalf("A trusts %+v, want B", trust)
	}

	// A run, live: B's next task is trusted now and runs direct; /runs shows it as it runs,
	// from the event stream, and drops it when it ends.
	do("runs page", chromedp.Navigate(base+"/runs"), wait("#runs-empty"))
	inert("/runs")
	second := strings.TrimSpace(b.mustAnet("send", "--to", idA.AID(), "please run, \u202eslowly"))
	do("live run", wait("#runs tbody tr"))
	visible("/runs", "#runs tbody", idB.AID(), second, "direct")
	inert("/runs with a run")
	shot("runs")
	do("run ends", wait("#runs-empty"))
	testkit.WaitFor(t, "B has the run's answer", func() bool {
		var it control.Interaction
		b.jsonOf(&it, "show", second)
		return it.Answer != nil && it.Answer.Text == "answered while you watched"
	})

	// The run's interaction page lists it (K1: a direct run is not metered).
	do("run's interaction", chromedp.Navigate(base+"/interactions/"+second), wait(".run"))
	visible("the run", ".run", "direct", "not pass through the node")
	inert("/interactions/" + second)

	// Spend: today's budget and the chain's counted runs of B, drawn on the server.
	do("spend", chromedp.Navigate(base+"/spend"), wait("#history svg"))
	inert("/spend")
	if bars := get("bars", chromedp.Evaluate[int](`document.querySelectorAll("#history svg rect.bar").length`)).(int); bars != 2*30 {
		t.Fatalf("/spend draws %d bars, want 30 for all peers and 30 for B", bars)
	}
	visible("/spend", "#history", "0.55 in all", idB.AID())
	visible("/spend", "#today", "0.55 of 5.00")
	shot("spend")

	// Evidence: the timeline, the note as text, and a verification.
	do("evidence", chromedp.Navigate(base+"/evidence"), wait("table.evidence"))
	inert("/evidence")
	visible("/evidence", "table.evidence", "operator_note", "task_received", "trust_added", `report\u202eexe.pdf`, `<script>window.__pwned=1</script>`)
	do("verify", click("#verify"), wait("#verify-result"))
	visible("verify", "#verify-result", "The chain verifies")
	inert("/evidence after verify")
	shot("evidence")

	// Every page after all of it: still nothing ran.
	for _, p := range []string{"/", "/interactions", "/interactions/" + task, "/runs", "/spend", "/evidence"} {
		do("reload "+p, chromedp.Navigate(base+p), wait("main"))
		inert(p)
	}
}
