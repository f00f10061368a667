package integration

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"anet.dev/anet/pkg/localca"
	"anet.dev/anet/pkg/modelproxy/standin"
)

// fakeUpstream is what the stand-in model services of the real-agent tests share: an HTTP/2
// server under the test CA, and the record of every request that reached it and of every
// way one broke the fake's expectations. A fake embeds it and adds its API's answers.
type fakeUpstream struct {
	srv *httptest.Server

	mu       sync.Mutex // guards the fields that follow, and those the embedding fake names
	requests []standin.Recorded
	problems []string
}

// start serves h over TLS with ca's certificate until the test ends.
func (u *fakeUpstream) start(t *testing.T, ca *localca.Authority, h http.HandlerFunc) {
	t.Helper()
	u.srv = httptest.NewUnstartedServer(h)
	u.srv.EnableHTTP2 = true
	u.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	u.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.Cert}}
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
}

func (u *fakeUpstream) Addr() string { return u.srv.Listener.Addr().String() }

func (u *fakeUpstream) Requests() []standin.Recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]standin.Recorded(nil), u.requests...)
}

func (u *fakeUpstream) Problems() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.problems...)
}

func (u *fakeUpstream) problem(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

// record reads r's body and keeps the request as it arrived.
func (u *fakeUpstream) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, standin.Recorded{Path: r.URL.Path, Query: r.URL.RawQuery, Proto: r.ProtoMajor, Header: r.Header.Clone(), Body: body})
	u.mu.Unlock()
	return body
}
