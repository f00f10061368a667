package modelproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// R1, E8: the request body is read as before its reading was made one allocation: the same
// bytes and the same error for an announced length that is right, short, long or past the
// limit, an unknown length, and a body that fails part-way or comes a byte at a time.
func TestReadBodyAsBufferReadFromR1E8(t *testing.T) {
	// reference is readBody as it was: bytes.Buffer.ReadFrom over the limited body.
	reference := func(r *http.Request, max int64) ([]byte, error) {
		if n := r.ContentLength; n >= 0 && n < max {
			buf := bytes.NewBuffer(make([]byte, 0, n+1))
			_, err := buf.ReadFrom(io.LimitReader(r.Body, max))
			return buf.Bytes(), err
		}
		return io.ReadAll(io.LimitReader(r.Body, max))
	}
	broken := errors.New("connection reset")
	bodies := map[string]func(string) io.Reader{
		"whole":       func(s string) io.Reader { return strings.NewReader(s) },
		"byte a time": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"eof with data": func(s string) io.Reader {
			return iotest.DataErrReader(strings.NewReader(s))
		},
		"broken": func(s string) io.Reader { return io.MultiReader(strings.NewReader(s), iotest.ErrReader(broken)) },
		"short": func(s string) io.Reader {
			return io.MultiReader(strings.NewReader(s), iotest.ErrReader(io.ErrUnexpectedEOF))
		},
	}
	const max = 64
	for _, size := range []int{0, 1, 10, 62, 63, 64, 65, 200} {
		body := strings.Repeat("x", size)
		for _, announced := range []int64{-1, 0, int64(size) - 1, int64(size), int64(size) + 1, max - 1, max, max + 5} {
			for name, mk := range bodies {
				wantB, wantErr := reference(&http.Request{ContentLength: announced, Body: io.NopCloser(mk(body))}, max)
				gotB, gotErr := readBody(&http.Request{ContentLength: announced, Body: io.NopCloser(mk(body))}, max)
				if !bytes.Equal(gotB, wantB) || !errors.Is(gotErr, wantErr) || (gotErr == nil) != (wantErr == nil) {
					t.Errorf("%d bytes announced as %d, %s: got %d bytes, %v; want %d bytes, %v", size, announced, name, len(gotB), gotErr, len(wantB), wantErr)
				}
			}
		}
	}
}
