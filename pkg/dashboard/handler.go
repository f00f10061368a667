package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"anet.dev/anet/pkg/control"
)

// CSP is every page's Content-Security-Policy: the dashboard's own script and style only,
// no inline code, no framing, no form posting elsewhere, nothing fetched from another
// origin. A peer's text that slipped past escaping would still run nothing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxForm bounds a POST body: a reply's text and a token.
const maxForm = 1 << 20

func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with
	// the dashboard's own form posts (Fetch's rule for a request's Origin), and the Origin
	// check could not tell them from a sandboxed frame's. A Referer still never leaves the
	// dashboard: its pages link nowhere else and the CSP lets them request nothing else.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// ServeHTTP refuses a request that does not name this listener in Host (a DNS-rebinding
// page sends its own name), then dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setHeaders(w.Header())
	if !s.allowedHost(r.Host) {
		s.log.Debug("dashboard request refused", "reason", "host", "host", r.Host, "path", r.URL.Path)
		s.fail(w, http.StatusMisdirectedRequest, "Wrong host", "This dashboard answers only requests addressed to "+s.ownOrigin()+".")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /static/{file}", s.static)
	s.mux.HandleFunc("GET /login", s.login)
	s.mux.HandleFunc("POST /logout", s.action(s.logout))
	s.mux.HandleFunc("GET /{$}", s.page(s.overview))
	s.mux.HandleFunc("GET /interactions", s.page(s.interactions))
	s.mux.HandleFunc("GET /interactions/{id}", s.page(s.interaction))
	s.mux.HandleFunc("POST /interactions/{id}/reply", s.action(s.reply))
	s.mux.HandleFunc("POST /trust", s.action(s.trust))
	s.mux.HandleFunc("GET /runs", s.page(s.runs))
	s.mux.HandleFunc("GET /events/runs", s.page(s.runEvents))
	s.mux.HandleFunc("GET /spend", s.page(s.spend))
	s.mux.HandleFunc("GET /evidence", s.page(s.evidence))
	s.mux.HandleFunc("POST /evidence/verify", s.action(s.verify))
	s.mux.Handle("/metrics", s.metricsHandler())
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, "Not found", "There is no page "+r.URL.Path+" here.")
	})
}

// handler is a page or an action with its session.
type handler func(w http.ResponseWriter, r *http.Request, sess *session)

// page requires a session.
func (s *Server) page(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.auth.sessionOf(r)
		if sess == nil {
			s.fail(w, http.StatusUnauthorized, "Not logged in", "Run anet dashboard and open the URL it prints: it logs this browser in once.")
			return
		}
		h(w, r, sess)
	}
}

// action requires, beyond a session, a POST from one of the dashboard's own pages: Origin
// is the dashboard's own (under any of the names Host may give it) and the form carries the
// session's CSRF token. Either alone would
// do against a cross-site form in today's browsers; both hold when one of them does not.
func (s *Server) action(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); !s.allowedOrigin(o) {
			s.log.Debug("dashboard request refused", "reason", "origin", "origin", o, "path", r.URL.Path)
			s.fail(w, http.StatusForbidden, "Refused", "This request did not come from one of the dashboard's own pages (Origin "+quote(o)+").")
			return
		}
		sess := s.auth.sessionOf(r)
		if sess == nil {
			s.fail(w, http.StatusUnauthorized, "Not logged in", "Run anet dashboard and open the URL it prints: it logs this browser in once.")
			return
		}
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(30 * time.Second))
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			s.fail(w, http.StatusBadRequest, "Bad form", "The form could not be read: "+err.Error())
			return
		}
		if !csrfOK(sess, r.PostForm.Get("csrf")) {
			s.log.Debug("dashboard request refused", "reason", "csrf", "path", r.URL.Path)
			s.fail(w, http.StatusForbidden, "Refused", "This form's token is missing or stale: reload the page and try again.")
			return
		}
		h(w, r, sess)
	}
}

func quote(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}

// login spends a one-time code and opens a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !s.auth.useLogin(r.URL.Query().Get("code")) {
		s.log.Warn("dashboard login refused: the code is unknown, used or expired")
		s.fail(w, http.StatusForbidden, "Login link refused", "This login link is not valid: each works once, for two minutes. Run anet dashboard for a new one.")
		return
	}
	cookie, err := s.auth.newSession()
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Login failed", err.Error())
		return
	}
	http.SetCookie(w, sessionCookie(cookie))
	s.log.Info("dashboard login")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	s.auth.endSession(r)
	c := sessionCookie("")
	c.MaxAge = -1
	http.SetCookie(w, c)
	s.render(w, http.StatusOK, "message", "Logged out", "", nil, message{Text: "This browser is logged out. Run anet dashboard to log in again."})
}

// Login makes a one-time login URL for the listener, the answer to POST
// /v1/dashboard/login (`anet dashboard`): it opens one session, once, within LoginLifetime.
func (s *Server) Login() (control.DashboardLogin, error) {
	origin := s.ownOrigin()
	if origin == "" {
		return control.DashboardLogin{}, errors.New("dashboard: not listening yet")
	}
	code, expires, err := s.auth.newLogin()
	if err != nil {
		return control.DashboardLogin{}, fmt.Errorf("dashboard login: %w", err)
	}
	return control.DashboardLogin{URL: origin + "/login?" + url.Values{"code": {code}}.Encode(), ExpiresAt: expires.UTC()}, nil
}
