package metrics

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// maxTokenFile bounds what is read of the token file: a token is a line, not a document.
const maxTokenFile = 4096

// refusalLogEvery is how often the same refusal is logged again: a scraper retries every
// few seconds, and the operator needs the line, not a line per scrape.
const refusalLogEvery = time.Minute

// Protect serves h only to requests that carry `Authorization: Bearer <token>`, where the
// token is tokenFile's content with surrounding white space trimmed. The file is read on
// every request, so a rotated token takes effect at once. It must be a regular file that
// neither its group nor others may read (mode & 0o077 == 0); otherwise, or when it is
// missing or empty, every request is refused with 403 (fail closed) and a log line names
// the file and the rule. A request without the header gets 401, one with another token 403.
// The token is never logged; it is compared through its SHA-256, in constant time, so not
// even its length shows in the time an answer takes.
func Protect(h http.Handler, tokenFile string) http.Handler {
	return ProtectFile(h, func() string { return tokenFile })
}

// ProtectFile is Protect with the token file's path asked at every request, for a listener
// whose setting a reload may change (dashboard.metrics_token_file); "" refuses every request.
func ProtectFile(h http.Handler, tokenFile func() string) http.Handler {
	return &protected{next: h, file: tokenFile, last: map[string]time.Time{}}
}

type protected struct {
	next http.Handler
	file func() string

	mu   sync.Mutex // guards last
	last map[string]time.Time
}

func (p *protected) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	file := p.file()
	want, err := readToken(file)
	if err != nil {
		p.warn(err.Error(), "metrics: token file refused; every scrape is refused until it is fixed", "file", file, "rule", err.Error())
		http.Error(w, "forbidden: the metrics token file is not usable (see the node's log)", http.StatusForbidden)
		return
	}
	got, ok := bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="anet metrics"`)
		http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	a, b := sha256.Sum256(got), sha256.Sum256(want)
	if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
		p.warn("wrong token", "metrics: scrape with a wrong bearer token refused; later ones within a minute are not logged", "file", file, "remote", r.RemoteAddr)
		http.Error(w, "forbidden: wrong token", http.StatusForbidden)
		return
	}
	p.next.ServeHTTP(w, r)
}

// warn logs msg unless a line of the same key was logged within refusalLogEvery. The logger
// is slog.Default() at the time of the call, so the daemon's (or a test's) handler gets it.
func (p *protected) warn(key, msg string, args ...any) {
	now := time.Now()
	p.mu.Lock()
	at, seen := p.last[key]
	if seen && now.Sub(at) < refusalLogEvery {
		p.mu.Unlock()
		return
	}
	if len(p.last) > 64 {
		clear(p.last)
	}
	p.last[key] = now
	p.mu.Unlock()
	slog.Default().Warn(msg, args...)
}

// bearer returns the credentials of r's Bearer Authorization header.
func bearer(r *http.Request) ([]byte, bool) {
	v := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return nil, false
	}
	cred = strings.TrimSpace(cred)
	return []byte(cred), cred != ""
}

// readToken reads the token from path under Protect's rules. The mode is checked on the
// descriptor that is read, so the file cannot be swapped between the check and the read;
// the errors name the rule, never the content.
func readToken(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no token file is configured (dashboard.metrics_token_file)")
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("the file does not exist")
		}
		return nil, fmt.Errorf("the file cannot be opened: %w", cause(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("the file cannot be read: %w", cause(err))
	}
	if !fi.Mode().IsRegular() {
		what := "a special file"
		if fi.IsDir() {
			what = "a directory"
		}
		return nil, fmt.Errorf("it must be a regular file, not %s", what)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("mode %04o lets its group or others read it; it must be 0600 or 0400 (chmod 600 %s)", perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("the file cannot be read: %w", cause(err))
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("it is longer than %d bytes; it must hold the token alone", maxTokenFile)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("it is empty; write a token into it")
	}
	return b, nil
}

// cause is the system's error inside err (a *PathError already names the file).
func cause(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
