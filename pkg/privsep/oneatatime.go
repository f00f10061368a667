package privsep

import (
	"context"
	"fmt"
	"time"

	"anet.dev/anet/pkg/reasons"
)

// OneAtATime returns a handler that runs h for one request at a time and answers within limit.
// A request that comes while another runs waits for it, at most limit, and is then refused
// with a message that says so. h gets a context that ends after limit; if h overruns it, the
// request is answered with a timeout at once, and the next request waits until h has really
// returned. A helper's self-test is such a handler: two batteries at once would load the host
// twice and meet each other's canaries, and one that hangs must not hold anetd's call forever.
func OneAtATime(method string, limit time.Duration, h Handler) Handler {
	slot := make(chan struct{}, 1)
	return func(ctx context.Context, req *Request) (Reply, error) {
		wait := time.NewTimer(limit)
		defer wait.Stop()
		select {
		case slot <- struct{}{}:
		case <-wait.C:
			closeAll(req.Files)
			return Reply{}, &Error{Code: reasons.Internal, Message: fmt.Sprintf("%s: busy: another %s has been running for more than %s", method, method, limit)}
		case <-ctx.Done():
			closeAll(req.Files)
			return Reply{}, ctx.Err()
		}
		hctx, cancel := context.WithTimeout(ctx, limit)
		type answer struct {
			reply Reply
			err   error
		}
		done := make(chan answer, 1)
		go func() {
			// The slot is given back when h has returned, not when the answer went out.
			defer func() { <-slot }()
			defer cancel()
			r, err := h(hctx, req)
			done <- answer{r, err}
		}()
		select {
		case a := <-done:
			return a.reply, a.err
		case <-hctx.Done():
			if ctx.Err() != nil {
				return Reply{}, ctx.Err()
			}
			return Reply{}, &Error{Code: reasons.Internal, Message: fmt.Sprintf("%s: did not finish within %s", method, limit)}
		}
	}
}
