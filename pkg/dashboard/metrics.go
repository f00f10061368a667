package dashboard

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"net/http"
	"os"
	"strings"
)

// maxTokenFile bounds what is read of the metrics token file.
const maxTokenFile = 4096

// metrics serves the metrics handler to a scraper that sends the token of
// dashboard.metrics_token_file as a bearer token. No session and no cookie opens it: a
// scraper has none, and a browser's session must not open a door meant for a token. The Host
// check has run already.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		s.fail(w, http.StatusNotFound, "Not found", "This node serves no metrics.")
		return
	}
	want, ok := s.metricsToken()
	if !ok {
		s.fail(w, http.StatusForbidden, "Metrics closed", "Set dashboard.metrics_token_file to a file holding the scraper's token.")
		return
	}
	got, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	// Hashes of equal length, so the comparison says nothing of the token's length either.
	g, t := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256(want)
	if !found || subtle.ConstantTimeCompare(g[:], t[:]) != 1 {
		s.log.Debug("dashboard metrics refused", "reason", "token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="anet metrics"`)
		s.fail(w, http.StatusUnauthorized, "Unauthorized", "/metrics needs the bearer token of dashboard.metrics_token_file.")
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

// metricsToken reads the token file now, so a new token applies without a restart; ok is
// false when none is set, the file cannot be read, or it holds no token.
func (s *Server) metricsToken() ([]byte, bool) {
	path := *s.tokFile.Load()
	if path == "" {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		s.log.Warn("dashboard metrics token file", "err", err)
		return nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil || len(b) > maxTokenFile {
		s.log.Warn("dashboard metrics token file cannot be read or is too large", "path", path, "err", err)
		return nil, false
	}
	tok := bytes.TrimSpace(b)
	return tok, len(tok) > 0
}
