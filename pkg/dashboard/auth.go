package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Bounds on what the dashboard keeps in memory: the control socket is the operator's, but
// nothing it hands out may grow without end.
const (
	maxLogins   = 16
	maxSessions = 64
)

// CookieName is the session cookie.
const CookieName = "anet_dashboard"

// auth holds the one-time login codes and the sessions, in memory: a restart of anetd (or
// of the dashboard, on a reload that moves it) logs everyone out.
type auth struct {
	now func() time.Time

	mu       sync.Mutex
	logins   map[[32]byte]time.Time // SHA-256 of a code → when it expires
	sessions map[[32]byte]*session  // SHA-256 of a cookie → its session
}

// session is one logged-in browser.
type session struct {
	csrf    string
	expires time.Time
}

func newAuth(now func() time.Time) *auth {
	return &auth{now: now, logins: map[[32]byte]time.Time{}, sessions: map[[32]byte]*session{}}
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newLogin makes a code that opens one session, once, within LoginLifetime. Only its hash
// is kept, so nothing in memory is a code.
func (a *auth) newLogin() (code string, expires time.Time, err error) {
	code, err = randomToken()
	if err != nil {
		return "", time.Time{}, err
	}
	now := a.now()
	expires = now.Add(LoginLifetime)
	a.mu.Lock()
	defer a.mu.Unlock()
	for h, exp := range a.logins {
		if !now.Before(exp) {
			delete(a.logins, h)
		}
	}
	for len(a.logins) >= maxLogins {
		delete(a.logins, oldest(a.logins))
	}
	a.logins[sha256.Sum256([]byte(code))] = expires
	return code, expires, nil
}

func oldest(m map[[32]byte]time.Time) [32]byte {
	var key [32]byte
	var at time.Time
	for k, v := range m {
		if at.IsZero() || v.Before(at) {
			key, at = k, v
		}
	}
	return key
}

// useLogin spends a code: true once for a code that has not expired, false for an unknown,
// spent or expired one.
func (a *auth) useLogin(code string) bool {
	if code == "" {
		return false
	}
	h := sha256.Sum256([]byte(code))
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.logins[h]
	delete(a.logins, h)
	return ok && a.now().Before(exp)
}

// newSession opens a session and returns its cookie value.
func (a *auth) newSession() (cookie string, err error) {
	cookie, err = randomToken()
	if err != nil {
		return "", err
	}
	csrf, err := randomToken()
	if err != nil {
		return "", err
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for h, s := range a.sessions {
		if !now.Before(s.expires) {
			delete(a.sessions, h)
		}
	}
	for len(a.sessions) >= maxSessions {
		var key [32]byte
		var at time.Time
		for k, s := range a.sessions {
			if at.IsZero() || s.expires.Before(at) {
				key, at = k, s.expires
			}
		}
		delete(a.sessions, key)
	}
	a.sessions[sha256.Sum256([]byte(cookie))] = &session{csrf: csrf, expires: now.Add(SessionLifetime)}
	return cookie, nil
}

// sessionOf is the request's live session, or nil.
func (a *auth) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	h := sha256.Sum256([]byte(c.Value))
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[h]
	if !ok {
		return nil
	}
	if !a.now().Before(s.expires) {
		delete(a.sessions, h)
		return nil
	}
	return s
}

// live reports whether s is still open (a stream checks between events).
func (a *auth) live(s *session) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, v := range a.sessions {
		if v == s {
			return a.now().Before(s.expires)
		}
	}
	return false
}

// endSession logs the request's browser out.
func (a *auth) endSession(r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return
	}
	a.mu.Lock()
	delete(a.sessions, sha256.Sum256([]byte(c.Value)))
	a.mu.Unlock()
}

// csrfOK compares the form's token with the session's in constant time.
func csrfOK(s *session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// sessionCookie is the cookie a login sets: for this origin's every path, never sent with a
// request another site starts, never readable by script.
func sessionCookie(value string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(SessionLifetime / time.Second)}
}
