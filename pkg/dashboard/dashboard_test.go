package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/receipt"
)

// The peer-written payloads every page must keep inert (U1).
const (
	payloadScript   = `<script>window.__pwned=1</script>`
	payloadImg      = `<img src=x onerror="window.__pwned=1">`
	payloadJSLink   = `javascript:window.__pwned=1`
	payloadTextarea = `</textarea><script>window.__pwned=1</script>`
	payloadBidi     = "invoice \u202egnp.exe"
)

const testAID = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"

// rig is a dashboard in front of a real control server (pkg/control, Call) whose handlers
// give the control API's own types; the end-to-end test (browser_test.go) puts it in front
// of a real anetd.
type rig struct {
	t      *testing.T
	srv    *Server
	cs     *control.Server
	base   string // http://127.0.0.1:PORT
	host   string
	clock  *clock
	mu     sync.Mutex
	active []control.ActiveRun
	calls  []string // state-changing control requests seen, "POST /v1/trust an…"
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	r := &rig{t: t, clock: &clock{t: time.Date(2030, 5, 1, 12, 0, 0, 0, time.Local)}}
	r.cs = control.NewServer("unused", slog.New(slog.DiscardHandler))
	task := control.Interaction{Interaction: "ix-1", Peer: testAID, Direction: "in", State: "new",
		Text: strings.Join([]string{payloadScript, payloadImg, payloadJSLink, payloadTextarea, payloadBidi}, "\n"), Delivery: []control.Delivery{}}
	// A sandboxed run of it with receipts: the host and the SNI are what the agent asked
	// for, the path is the agent's too (H1-H7, K1, U1).
	at := time.Date(2030, 5, 1, 11, 0, 0, 0, time.UTC)
	task.Runs = []control.Run{{Run: "r-1", At: at, Route: "sandbox", Counted: true, Metered: true, Receipts: &receipt.Set{
		Tunnels: []receipt.Tunnel{
			{Host: "pypi.org", Port: 443, Dialled: "151.101.0.223:443", SNI: "pypi.org", Sent: 812, Received: 40960, Opened: at, Ended: at.Add(time.Second), End: receipt.Closed},
			{Host: payloadImg + payloadBidi, Port: 443, SNI: payloadScript, Opened: at, Ended: at, End: receipt.Refused, Code: "egress_host_not_allowed", Rule: "H4"},
		},
		Model: []receipt.Model{{API: "anthropic", Method: "POST", Path: "/v1/messages" + payloadTextarea, Status: 200, Model: "claude-haiku-5-5",
			TokensIn: 1200, TokensOut: 300, Cost: 2100, Started: at, Ended: at.Add(2 * time.Second), End: receipt.Closed}},
		DroppedTunnels: 2,
	}}}
	r.cs.Handle("GET", "/v1/status", func(*http.Request) (any, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		st := control.Status{AID: "annode", Warnings: []control.Warning{{Code: "no_cgroup_limits", Text: "limits", Detail: payloadScript}},
			Wall: &control.WallProof{At: at, OK: false, Why: "daily", Tier: "bwrap", Failed: []string{"sandbox.attack.af_vsock"}}}
		st.AutoReply.Compiled, st.AutoReply.Trusted = true, "direct"
		st.AutoReply.Active = append([]control.ActiveRun{}, r.active...)
		return st, nil
	})
	r.cs.Handle("GET", "/v1/inbox", func(*http.Request) (any, error) { return []control.Interaction{task}, nil })
	r.cs.Handle("GET", "/v1/sent", func(*http.Request) (any, error) { return []control.Interaction{}, nil })
	r.cs.Handle("GET", "/v1/interactions/{id}", func(*http.Request) (any, error) { return []control.Interaction{task}, nil })
	r.cs.Handle("POST", "/v1/trust", func(req *http.Request) (any, error) {
		var in control.TrustRequest
		json.NewDecoder(req.Body).Decode(&in)
		r.record("POST /v1/trust " + in.AID)
		return control.TrustEntry{AID: in.AID}, nil
	})
	r.cs.Handle("POST", "/v1/reply", func(req *http.Request) (any, error) {
		var in control.ReplyRequest
		json.NewDecoder(req.Body).Decode(&in)
		r.record("POST /v1/reply " + in.Interaction + " " + in.Text)
		return task, nil
	})
	o.Node, o.Now, o.Poll = r.cs, r.clock.now, 20*time.Millisecond
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := s.bind(l, "")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(l)
	t.Cleanup(func() { s.Close(context.Background()) })
	r.srv, r.host, r.base = s, l.Addr().String(), "http://"+l.Addr().String()
	return r
}

func (r *rig) record(call string) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

func (r *rig) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.calls...)
}

// browser is an HTTP client with a cookie jar that follows no redirect on its own.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login spends a fresh login URL with c and returns the CSRF token of the first page.
func (r *rig) login(c *http.Client) string {
	r.t.Helper()
	l, err := r.srv.Login()
	if err != nil {
		r.t.Fatal(err)
	}
	resp := r.do(c, "GET", l.URL, nil, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		r.t.Fatalf("login = %s (Location %q), want 303 to /", resp.Status, resp.Header.Get("Location"))
	}
	return csrfOf(r.t, r.body(r.do(c, "GET", r.base+"/", nil, nil)))
}

func (r *rig) do(c *http.Client, method, u string, form url.Values, hdr http.Header) *http.Response {
	r.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		r.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header[k] = v
		if k == "Host" {
			req.Host = v[0]
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (r *rig) body(resp *http.Response) string {
	r.t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	return m[1]
}

// C4: a login URL opens one session, once, for two minutes; the session cookie is
// HttpOnly, SameSite=Strict, for the whole origin, and ends after twelve hours.
func TestLoginCodeWorksOnceC4(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	if resp := r.do(c, "GET", r.base+"/", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a page before login = %s, want 401", resp.Status)
	}
	l, err := r.srv.Login()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.URL, r.base+"/login?code=") || len(strings.TrimPrefix(l.URL, r.base+"/login?code=")) != 43 {
		t.Fatalf("login URL = %q, want %s/login?code= and 32 random bytes", l.URL, r.base)
	}
	if !l.ExpiresAt.Equal(r.clock.now().Add(2 * time.Minute)) {
		t.Fatalf("expires at %v, want two minutes from now", l.ExpiresAt)
	}
	resp := r.do(c, "GET", l.URL, nil, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %s, want 303", resp.Status)
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{CookieName + "=", "Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("Set-Cookie = %q, want %s", cookie, want)
		}
	}
	if resp := r.do(c, "GET", r.base+"/", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("a page after login = %s, want 200", resp.Status)
	}
	// Replayed, by this browser or another: refused, and says so.
	for _, who := range []*http.Client{c, browser(t)} {
		resp := r.do(who, "GET", l.URL, nil, nil)
		if b := r.body(resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "works once") {
			t.Fatalf("replayed login = %s %q, want 403 saying it works once", resp.Status, b)
		}
	}
	// Expired unused: refused.
	late, _ := r.srv.Login()
	r.clock.add(2*time.Minute + time.Second)
	if resp := r.do(browser(t), "GET", late.URL, nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("expired login = %s, want 403", resp.Status)
	}
	for _, u := range []string{r.base + "/login", r.base + "/login?code=", r.base + "/login?code=AAAA"} {
		if resp := r.do(browser(t), "GET", u, nil, nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET %s = %s, want 403", u, resp.Status)
		}
	}
	// The session ends after twelve hours.
	r.clock.add(12 * time.Hour)
	if resp := r.do(c, "GET", r.base+"/", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a page after twelve hours = %s, want 401", resp.Status)
	}
}

// C4, U1: every request must name the listener in Host (a DNS-rebinding page names its own
// host), the login, the static files and /metrics included.
func TestHostMustNameTheListenerC4(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	r.login(c)
	_, port, _ := net.SplitHostPort(r.host)
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1", "127.0.0.1:1", "localhost.evil.example:" + port, "[::1]:" + port} {
		for _, path := range []string{"/", "/login?code=x", "/static/dashboard.css", "/metrics", "/events/runs"} {
			resp := r.do(c, "GET", r.base+path, nil, http.Header{"Host": {host}})
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("GET %s with Host %s = %s, want 421", path, host, resp.Status)
			}
		}
	}
	// The session cookie, sent by hand: a jar keys it by the Host header.
	base, _ := url.Parse(r.base)
	cookie := c.Jar.Cookies(base)[0]
	for _, host := range []string{r.host, "localhost:" + port, "LOCALHOST:" + port} {
		hdr := http.Header{"Host": {host}, "Cookie": {cookie.Name + "=" + cookie.Value}}
		if resp := r.do(http.DefaultClient, "GET", r.base+"/", nil, hdr); resp.StatusCode != http.StatusOK {
			t.Errorf("GET / with Host %s = %s, want 200", host, resp.Status)
		}
	}
}

// C4: a state change needs a POST from the dashboard's own page: its Origin and the
// session's CSRF token; trust and reply then need the confirming POST before anything
// changes.
func TestPostNeedsOriginCSRFAndConfirmationC4(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	csrf := r.login(c)
	own := http.Header{"Origin": {r.base}}
	_, port, _ := net.SplitHostPort(r.host)
	all := url.Values{"csrf": {csrf}, "aid": {testAID}, "confirm": {"yes"}}
	wrong := []byte(csrf)
	wrong[0] ^= 1 // another token of the same length
	refused := []struct {
		name string
		form url.Values
		hdr  http.Header
	}{
		{"no Origin", all, nil},
		{"cross-site Origin", all, http.Header{"Origin": {"http://evil.example"}}},
		{"a rebinding name's Origin", all, http.Header{"Origin": {"http://evil.example:" + port}}},
		{"another port's Origin", all, http.Header{"Origin": {"http://127.0.0.1:1"}}},
		{"https Origin", all, http.Header{"Origin": {"https://" + r.host}}},
		{"null Origin", all, http.Header{"Origin": {"null"}}},
		{"no CSRF token", url.Values{"aid": {testAID}, "confirm": {"yes"}}, own},
		{"wrong CSRF token", url.Values{"csrf": {string(wrong)}, "aid": {testAID}, "confirm": {"yes"}}, own},
	}
	for _, tc := range refused {
		resp := r.do(c, "POST", r.base+"/trust", tc.form, tc.hdr)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: POST /trust = %s, want 403", tc.name, resp.Status)
		}
	}
	if resp := r.do(browser(t), "POST", r.base+"/trust", url.Values{"csrf": {csrf}, "aid": {testAID}, "confirm": {"yes"}}, own); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the session: POST /trust = %s, want 401", resp.Status)
	}
	if got := r.seen(); len(got) != 0 {
		t.Fatalf("refused POSTs reached the node: %v", got)
	}

	// The first POST shows what will happen and changes nothing; the dashboard's other
	// name for the same listener is its own origin too.
	resp := r.do(c, "POST", r.base+"/trust", url.Values{"csrf": {csrf}, "aid": {testAID}}, http.Header{"Origin": {"http://localhost:" + port}})
	page := r.body(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, testAID) || !strings.Contains(page, `name="confirm" value="yes"`) || !strings.Contains(page, "as your own user") {
		t.Fatalf("trust, first POST = %s:\n%s\nwant a confirmation naming the peer and what direct means", resp.Status, page)
	}
	if got := r.seen(); len(got) != 0 {
		t.Fatalf("the confirmation page changed the node: %v", got)
	}
	r.do(c, "POST", r.base+"/trust", url.Values{"csrf": {csrf}, "aid": {testAID}, "confirm": {"yes"}}, own)
	resp = r.do(c, "POST", r.base+"/interactions/ix-1/reply", url.Values{"csrf": {csrf}, "peer": {testAID}, "text": {payloadTextarea}}, own)
	page = r.body(resp)
	if strings.Contains(page, payloadTextarea) || !strings.Contains(page, "&lt;/textarea&gt;&lt;script&gt;") {
		t.Fatalf("the reply's confirmation does not escape its text:\n%s", page)
	}
	r.do(c, "POST", r.base+"/interactions/ix-1/reply", url.Values{"csrf": {csrf}, "peer": {testAID}, "text": {"by hand"}, "confirm": {"yes"}}, own)
	want := []string{"POST /v1/trust " + testAID, "POST /v1/reply ix-1 by hand"}
	if got := r.seen(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("node saw %v, want %v", got, want)
	}
	// Logging out ends the session.
	r.do(c, "POST", r.base+"/logout", url.Values{"csrf": {csrf}}, own)
	if resp := r.do(c, "GET", r.base+"/", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a page after logout = %s, want 401", resp.Status)
	}
}

// U1: every answer, pages and refusals and files alike, carries the headers that keep a
// page from running anything but the dashboard's own script, being framed or cached.
func TestHeadersOnEveryAnswerU1(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	r.login(c)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin", // no-referrer makes a browser's own form posts Origin: null

		"Cache-Control": "no-store",
	}
	for _, path := range []string{"/", "/interactions", "/interactions/ix-1", "/runs", "/static/dashboard.js", "/static/dashboard.css", "/nope", "/login?code=x", "/metrics"} {
		resp := r.do(c, "GET", r.base+path, nil, nil)
		for k, v := range want {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	resp := r.do(c, "GET", r.base+"/", nil, http.Header{"Host": {"evil.example"}})
	if resp.Header.Get("Content-Security-Policy") != want["Content-Security-Policy"] {
		t.Errorf("the Host refusal has no CSP")
	}
}

// U1: a peer's task, and the names its run's agent asked for (receipts), reach the page
// escaped, the bidi override shown as an escape, never as a link; nothing on the page is
// inline script or style.
func TestPeerTextIsInertU1(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	r.login(c)
	for _, path := range []string{"/", "/interactions", "/interactions/ix-1"} {
		page := r.body(r.do(c, "GET", r.base+path, nil, nil))
		for _, raw := range []string{"<script>window", "<img src=x", "</textarea><script>", "\u202e", `href="javascript`, "style=", "onerror=\"", "<script>"} {
			if strings.Contains(page, raw) {
				t.Errorf("GET %s holds %q raw:\n%s", path, raw, page)
			}
		}
		if path == "/" {
			if !strings.Contains(page, "&lt;script&gt;window.__pwned=1&lt;/script&gt;") {
				t.Errorf("GET / does not show the warning's detail as text")
			}
			// S7: the last proof of the wall, its failure and the item that failed.
			for _, shown := range []string{"Last wall proof", "failed: sandboxed turns are refused", "sandbox.attack.af_vsock", "daily"} {
				if !strings.Contains(page, shown) {
					t.Errorf("GET / does not show the wall proof's %q", shown)
				}
			}
			continue
		}
		if path == "/interactions/ix-1" {
			// H1-H7, K1: the run's receipts, each destination a row, the agent's names as text.
			for _, shown := range []string{"Receipts", "pypi.org:443", "151.101.0.223:443", "812 B", "40960 B", "egress_host_not_allowed", "(H4)",
				"POST /v1/messages&lt;/textarea&gt;", "claude-haiku-5-5", "0.0021", "2 more tunnels"} {
				if !strings.Contains(page, shown) {
					t.Errorf("GET %s does not show the receipts' %q", path, shown)
				}
			}
		}
		for _, shown := range []string{"&lt;script&gt;window.__pwned=1&lt;/script&gt;", "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;", "javascript:window.__pwned=1", `invoice \u202egnp.exe`} {
			if !strings.Contains(page, shown) {
				t.Errorf("GET %s does not show %q as text", path, shown)
			}
		}
	}
	for _, name := range []string{"dashboard.js"} {
		js := r.body(r.do(c, "GET", r.base+"/static/"+name, nil, nil))
		if strings.Contains(js, "innerHTML") || strings.Contains(js, "insertAdjacentHTML") || strings.Contains(js, "document.write") {
			t.Errorf("%s writes HTML; it must set textContent only", name)
		}
	}
}

// C4: the live runs page's stream sends the runs in status when they change, the peer's
// text made visible like every page's (U1); it needs the session.
func TestRunEventsFollowStatusC4(t *testing.T) {
	r := newRig(t, Options{})
	c := browser(t)
	if resp := r.do(c, "GET", r.base+"/events/runs", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the stream without a session = %s, want 401", resp.Status)
	}
	r.login(c)
	c.Timeout = 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", r.base+"/events/runs", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	events := bufio.NewScanner(resp.Body)
	next := func() RunsEvent {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var ev RunsEvent
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatalf("event %q: %v", data, err)
				}
				return ev
			}
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return RunsEvent{}
	}
	if ev := next(); len(ev.Runs) != 0 || ev.Error != "" {
		t.Fatalf("first event = %+v, want no runs", ev)
	}
	r.mu.Lock()
	r.active = []control.ActiveRun{{Run: "r-1", Peer: testAID, Interaction: "ix\u202e1", Route: "sandbox", Started: time.Now()}}
	r.mu.Unlock()
	ev := next()
	if len(ev.Runs) != 1 || ev.Runs[0].Run != "r-1" || ev.Runs[0].Interaction != `ix\u202e1` {
		t.Fatalf("event after a run started = %+v, want r-1 with its bidi override escaped", ev)
	}
	r.mu.Lock()
	r.active = nil
	r.mu.Unlock()
	if ev := next(); len(ev.Runs) != 0 {
		t.Fatalf("event after the run ended = %+v, want none", ev)
	}
}

// C4: /metrics is the metrics handler behind the bearer token of the token file, read
// anew on each request; a session cookie does not open it; no handler is a 404.
func TestMetricsNeedTheBearerTokenC4(t *testing.T) {
	r := newRig(t, Options{})
	if resp := r.do(browser(t), "GET", r.base+"/metrics", nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics without a handler = %s, want 404", resp.Status)
	}
	tokFile := filepath.Join(t.TempDir(), "metrics.token")
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "anet_up 1\n") })
	r = newRig(t, Options{Metrics: metrics})
	c := browser(t)
	r.login(c)
	if resp := r.do(c, "GET", r.base+"/metrics", nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("/metrics with no token file set = %s, want 403", resp.Status)
	}
	r.srv.SetMetricsTokenFile(tokFile)
	if resp := r.do(c, "GET", r.base+"/metrics", nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("/metrics with the token file missing = %s, want 403", resp.Status)
	}
	os.WriteFile(tokFile, []byte("s3cret-token\n"), 0o600)
	// No token at all is 401 (a challenge), a wrong one 403: pkg/metrics' one check.
	for _, auth := range []string{"", "Bearer", "Bearer ", "Basic s3cret-token"} {
		resp := r.do(c, "GET", r.base+"/metrics", nil, http.Header{"Authorization": {auth}})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/metrics with Authorization %q (and a session) = %s, want 401", auth, resp.Status)
		}
	}
	for _, auth := range []string{"Bearer s3cret", "Bearer s3cret-token-"} {
		resp := r.do(c, "GET", r.base+"/metrics", nil, http.Header{"Authorization": {auth}})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("/metrics with Authorization %q (and a session) = %s, want 403", auth, resp.Status)
		}
	}
	resp := r.do(browser(t), "GET", r.base+"/metrics", nil, http.Header{"Authorization": {"Bearer s3cret-token"}})
	if b := r.body(resp); resp.StatusCode != http.StatusOK || b != "anet_up 1\n" {
		t.Fatalf("/metrics with the token = %s %q, want the handler's answer", resp.Status, b)
	}
	os.WriteFile(tokFile, []byte("rotated\n"), 0o600)
	if resp := r.do(browser(t), "GET", r.base+"/metrics", nil, http.Header{"Authorization": {"Bearer s3cret-token"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("/metrics with the old token after a rotation = %s, want 403", resp.Status)
	}
	if resp := r.do(browser(t), "GET", r.base+"/metrics", nil, http.Header{"Authorization": {"Bearer rotated"}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics with the new token = %s, want 200", resp.Status)
	}
}

// K1, K2: the spend chart's bars stand on the axis, the largest day reaches the top, a day
// with any spend is visible and a day without none.
func TestSpendChartK1K2(t *testing.T) {
	h := control.SpendHistory{}
	for i, v := range []int64{0, 1, 500_000, 1_000_000} {
		d := control.SpendDay{Day: "2030-05-0" + string(rune('1'+i)), Spent: moneyOf(v)}
		if v > 0 {
			d.Peers = []control.PeerDay{{Peer: "a", Spent: moneyOf(v)}}
		}
		h.Days = append(h.Days, d)
	}
	total, peers := spendCharts(h)
	room := total.Base - chartTop
	if len(total.Bars) != 4 || total.Bars[0].H != 0 || total.Bars[1].H != 1 || total.Bars[2].H != room/2 || total.Bars[3].H != room {
		t.Fatalf("bars = %+v, want heights 0, 1, %d, %d", total.Bars, room/2, room)
	}
	for _, b := range total.Bars {
		if b.Y+b.H != total.Base || b.X < 0 || b.X+b.W > total.Width {
			t.Fatalf("bar %+v does not stand on the axis inside the chart", b)
		}
	}
	if len(peers) != 1 || peers[0].Title != "a" || peers[0].Total != moneyOf(1_500_001) {
		t.Fatalf("peer charts = %+v, want one for a with its total", peers)
	}
}

// tlog writes a dashboard's log into the test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) { w.t.Log(strings.TrimSpace(string(p))); return len(p), nil }
