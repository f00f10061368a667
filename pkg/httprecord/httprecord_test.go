package httprecord

import (
	"io"
	"net/http"
	"testing"
)

// The recorder keeps the first status and the body up to its bound; a write past the bound
// fails, writes nothing and marks the answer over, so a caller never reads a cut answer as
// whole.
func TestRecorderBoundsTheAnswer(t *testing.T) {
	r := New(8)
	if r.Status() != http.StatusOK {
		t.Fatalf("status before anything = %d, want 200", r.Status())
	}
	r.Header().Set("X-Anet-Reason", "spend_limit")
	r.WriteHeader(http.StatusPaymentRequired)
	r.WriteHeader(http.StatusOK)
	if n, err := io.WriteString(r, "12345"); n != 5 || err != nil {
		t.Fatalf("write within the bound = %d, %v", n, err)
	}
	if n, err := io.WriteString(r, "6789"); n != 0 || err == nil {
		t.Fatalf("write past the bound = %d, %v; want 0 and an error", n, err)
	}
	if r.Status() != http.StatusPaymentRequired || string(r.Body()) != "12345" || !r.Over() || r.Header().Get("X-Anet-Reason") != "spend_limit" {
		t.Fatalf("recorder = %d %q over=%v %v", r.Status(), r.Body(), r.Over(), r.Header())
	}
	var _ http.Flusher = r
}
