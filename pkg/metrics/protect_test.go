package metrics

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"anet.dev/anet/internal/testkit"
)

// captureLog captures slog.Default() for one test.
func captureLog(t *testing.T) *testkit.Buffer {
	t.Helper()
	lb := &testkit.Buffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(lb, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return lb
}

const secretToken = "s3cr3t-metrics-token-0123456789abcdef"

// writeToken writes content to a file of mode perm and returns its path.
func writeToken(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "metrics.token")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// get requests h with the Authorization header auth ("" sends none).
func get(h http.Handler, auth string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	h.ServeHTTP(rec, req)
	return rec
}

// The metrics are served only with the file's token, and only while the file is private:
// a file its group or others may read, a missing or empty one, or one that is not a regular
// file refuses everything (fail closed) with a log line naming the file and the rule; the
// token itself never reaches the log or an answer.
func TestProtect(t *testing.T) {
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("anet_runs_total 1\n")) })
	for _, tc := range []struct {
		name    string
		file    func(t *testing.T) string
		auth    string
		code    int
		logWant string // a log line must contain it; "" wants none
	}{
		{"right token", func(t *testing.T) string { return writeToken(t, secretToken+"\n", 0o600) }, "Bearer " + secretToken, 200, ""},
		{"scheme in any case, token trimmed", func(t *testing.T) string { return writeToken(t, "  "+secretToken+"\r\n", 0o400) }, "bearer   " + secretToken + " ", 200, ""},
		{"wrong token", func(t *testing.T) string { return writeToken(t, secretToken, 0o600) }, "Bearer " + secretToken + "x", 403, "wrong bearer token"},
		{"a prefix of the token", func(t *testing.T) string { return writeToken(t, secretToken, 0o600) }, "Bearer " + secretToken[:10], 403, "wrong bearer token"},
		{"no header", func(t *testing.T) string { return writeToken(t, secretToken, 0o600) }, "", 401, ""},
		{"basic, not bearer", func(t *testing.T) string { return writeToken(t, secretToken, 0o600) }, "Basic " + secretToken, 401, ""},
		{"empty bearer", func(t *testing.T) string { return writeToken(t, secretToken, 0o600) }, "Bearer ", 401, ""},
		{"group-readable file", func(t *testing.T) string { return writeToken(t, secretToken, 0o640) }, "Bearer " + secretToken, 403, "lets its group or others read it"},
		{"world-readable file", func(t *testing.T) string { return writeToken(t, secretToken, 0o604) }, "Bearer " + secretToken, 403, "lets its group or others read it"},
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, "Bearer " + secretToken, 403, "does not exist"},
		{"missing file, no header", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, "", 403, "does not exist"},
		{"empty file", func(t *testing.T) string { return writeToken(t, " \n", 0o600) }, "Bearer ", 403, "it is empty"},
		{"no file configured", func(t *testing.T) string { return "" }, "Bearer " + secretToken, 403, "no token file is configured"},
		{"a directory", func(t *testing.T) string { d := t.TempDir(); os.Chmod(d, 0o700); return d }, "Bearer " + secretToken, 403, "must be a regular file"},
		{"too long", func(t *testing.T) string { return writeToken(t, strings.Repeat("a", maxTokenFile+1), 0o600) }, "Bearer " + strings.Repeat("a", maxTokenFile+1), 403, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := captureLog(t)
			file := tc.file(t)
			rec := get(Protect(served, file), tc.auth)
			if rec.Code != tc.code {
				t.Fatalf("status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tc.code)
			}
			if served := strings.Contains(rec.Body.String(), "anet_runs_total"); served != (tc.code == 200) {
				t.Fatalf("metrics served = %v with status %d", served, rec.Code)
			}
			if tc.code == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge: %q", rec.Header().Get("WWW-Authenticate"))
			}
			logged := lb.String()
			if tc.logWant == "" && logged != "" {
				t.Errorf("logged %q, want nothing", logged)
			}
			if tc.logWant != "" && (!strings.Contains(logged, tc.logWant) || !strings.Contains(logged, "file="+file)) {
				t.Errorf("log %q, want a line naming the file %s and saying %q", logged, file, tc.logWant)
			}
			for _, out := range []string{logged, rec.Body.String()} {
				if strings.Contains(out, secretToken[:10]) || strings.Contains(out, strings.Repeat("a", 64)) {
					t.Errorf("the token shows in %q", out)
				}
			}
		})
	}
}

// The file is read on every request: a rotated token takes effect at once, and a file
// made readable by others starts refusing at once.
func TestProtectReadsTheFileEachTime(t *testing.T) {
	captureLog(t)
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	file := writeToken(t, "first", 0o600)
	h := Protect(served, file)
	if c := get(h, "Bearer first").Code; c != 200 {
		t.Fatalf("first token: %d", c)
	}
	if err := os.WriteFile(file, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := get(h, "Bearer first").Code; c != 403 {
		t.Fatalf("the rotated-out token: %d, want 403", c)
	}
	if c := get(h, "Bearer second").Code; c != 200 {
		t.Fatalf("the new token: %d, want 200", c)
	}
	os.Chmod(file, 0o644)
	if c := get(h, "Bearer second").Code; c != 403 {
		t.Fatalf("token file made world-readable: %d, want 403", c)
	}
}

// A scraper retrying against a broken file is logged once a minute, not once a scrape.
func TestProtectLogsARefusalOnce(t *testing.T) {
	lb := captureLog(t)
	h := Protect(http.NotFoundHandler(), filepath.Join(t.TempDir(), "none"))
	for range 5 {
		get(h, "Bearer x")
	}
	if n := strings.Count(lb.String(), "token file refused"); n != 1 {
		t.Fatalf("%d log lines for 5 refused scrapes, want 1:\n%s", n, lb)
	}
}
