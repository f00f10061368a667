package receipt

import (
	"encoding/json"
	"math"
)

// MaxEncodedBytes is what a run's set may take encoded. It travels to anetd inside the
// endpoint's usage, in one privsep message of 128 KiB beside the rest of the usage, and a
// reply over that is refused whole: the run's spend would go with it. 512 receipts with long
// names can pass 400 KiB, so the endpoint fits the set to this bound (Fit).
const MaxEncodedBytes = 96 << 10

// Fit returns s with as many receipts as fit in maxBytes encoded, keeping the earliest of
// each kind as Log does, and counting the rest as dropped. It trims the kind whose receipts
// take more bytes first, so a flood of one kind does not crowd out the other.
func (s Set) Fit(maxBytes int) Set {
	s = Of(append([]Tunnel(nil), s.Tunnels...), s.DroppedTunnels, append([]Model(nil), s.Model...), s.DroppedModel)
	if b, err := Encode(s); err == nil && len(b) <= maxBytes {
		return s
	}
	tSize, mSize := sizes(s.Tunnels), sizes(s.Model)
	var tBytes, mBytes int
	for _, n := range tSize {
		tBytes += n
	}
	for _, n := range mSize {
		mBytes += n
	}
	nt, nm := len(s.Tunnels), len(s.Model)
	drop := func() {
		if nt > 0 && (tBytes >= mBytes || nm == 0) {
			nt--
			tBytes -= tSize[nt]
		} else if nm > 0 {
			nm--
			mBytes -= mSize[nm]
		}
	}
	// The set's own keys and counts take well under this.
	const overhead = 128
	for tBytes+mBytes+overhead > maxBytes && nt+nm > 0 {
		drop()
	}
	for {
		out := Of(s.Tunnels[:nt:nt], addCount(s.DroppedTunnels, len(s.Tunnels)-nt), s.Model[:nm:nm], addCount(s.DroppedModel, len(s.Model)-nm))
		if b, err := Encode(out); (err == nil && len(b) <= maxBytes) || nt+nm == 0 {
			return out
		}
		drop()
	}
}

// addCount adds n to a dropped count that came from outside, saturating.
func addCount(c, n int) int {
	if n > 0 && c > math.MaxInt-n {
		return math.MaxInt
	}
	return c + n
}

// sizes are the encoded sizes of rs, with the comma that separates each from the next.
func sizes[T any](rs []T) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			// Encode fails on the set too; count it large, so it goes first.
			out[i] = MaxEncodedBytes
			continue
		}
		out[i] = len(b) + 1
	}
	return out
}
