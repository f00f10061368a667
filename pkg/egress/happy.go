package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"anet.dev/anet/pkg/dialer"
)

// dialPlan is how the checked addresses of one name are tried (RFC 8305).
type dialPlan struct {
	// delay is the Connection Attempt Delay: the next address is tried this long after the
	// previous attempt started, or at once when the previous one failed.
	delay time.Duration
	// attempt bounds one connection attempt; the caller's context bounds them all.
	attempt time.Duration
}

func (l Limits) dialer() dialPlan {
	return dialPlan{delay: l.ConnectDelay, attempt: l.ConnectTimeout}
}

// interleave orders addresses as RFC 8305 §4 asks: families alternate, starting with the
// family of the first address the resolver gave, each family in the resolver's order.
func interleave(addrs []netip.Addr) []netip.Addr {
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		if a.Unmap().Is4() {
			v4 = append(v4, a.Unmap())
		} else {
			v6 = append(v6, a)
		}
	}
	first, second := v6, v4
	if len(addrs) > 0 && addrs[0].Unmap().Is4() {
		first, second = v4, v6
	}
	out := make([]netip.Addr, 0, len(addrs))
	for i := 0; i < len(first) || i < len(second); i++ {
		if i < len(first) {
			out = append(out, first[i])
		}
		if i < len(second) {
			out = append(out, second[i])
		}
	}
	return out
}

// dialResult is one connection attempt's outcome.
type dialResult struct {
	c   net.Conn
	ap  netip.AddrPort
	err error
}

// dialHappy connects to one of addrs on port, Happy Eyeballs style (RFC 8305): attempts start
// plan.delay apart, or at once when one fails; each is bounded by plan.attempt and all by ctx;
// the first to connect wins and the others are abandoned. An address that drops packets costs
// one delay, not the whole budget. Only the given (checked) addresses are dialled (H5).
func dialHappy(ctx context.Context, addrs []netip.Addr, port uint16, plan dialPlan) (net.Conn, netip.AddrPort, error) {
	order := interleave(addrs)
	if len(order) == 0 {
		return nil, netip.AddrPort{}, errors.New("no address to dial")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan dialResult, len(order))
	next, pending := 0, 0
	// Since Go 1.23 a Reset timer never delivers a value from before the Reset.
	timer := time.NewTimer(plan.delay)
	defer timer.Stop()
	launch := func() {
		ap := netip.AddrPortFrom(order[next], port)
		next++
		pending++
		timer.Reset(plan.delay)
		go func() {
			actx, acancel := context.WithTimeout(ctx, plan.attempt)
			defer acancel()
			c, err := dialer.Dial(actx, "tcp", ap.String())
			results <- dialResult{c, ap, err}
		}()
	}
	launch()
	var errs []error
	for {
		var tick <-chan time.Time
		if next < len(order) {
			tick = timer.C
		}
		select {
		case r := <-results:
			pending--
			if r.err == nil {
				cancel()
				go drain(results, pending)
				return r.c, r.ap, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", r.ap, r.err))
			switch {
			case next < len(order):
				launch()
			case pending == 0:
				return nil, netip.AddrPort{}, errors.Join(errs...)
			}
		case <-tick:
			launch()
		case <-ctx.Done():
			go drain(results, pending)
			return nil, netip.AddrPort{}, errors.Join(append(errs, ctx.Err())...)
		}
	}
}

// drain closes the connections of attempts that finish after the race was decided.
func drain(results <-chan dialResult, n int) {
	for range n {
		if r := <-results; r.c != nil {
			r.c.Close()
		}
	}
}
