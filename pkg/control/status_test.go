package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// TestErrorStatus (F2, N1): an error reaches the CLI as its reason code with an HTTP status
// that says whose it is: the caller's (4xx), the host's (507 for a full disk: nothing was
// stored, nothing lost), a helper's (503), or the node's own (500, code internal).
func TestErrorStatus(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   reasons.Code
	}{
		{reasons.New(reasons.BadRequest, "x"), http.StatusBadRequest, reasons.BadRequest},
		{fmt.Errorf("record: %w", reasons.New(reasons.DiskFull, "no room")), http.StatusInsufficientStorage, reasons.DiskFull},
		{reasons.New(reasons.HelperDown, "anet-egress"), http.StatusServiceUnavailable, reasons.HelperDown},
		{reasons.New(reasons.Unauthorized, ""), http.StatusUnauthorized, reasons.Unauthorized},
		{errors.New("boom"), http.StatusInternalServerError, reasons.Internal},
	} {
		w := httptest.NewRecorder()
		writeError(w, c.err)
		var body ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("writeError(%v) body %q: %v", c.err, w.Body.String(), err)
		}
		if w.Code != c.status || body.Error.Code != c.code {
			t.Errorf("writeError(%v) = %d %s, want %d %s", c.err, w.Code, body.Error.Code, c.status, c.code)
		}
	}
}
