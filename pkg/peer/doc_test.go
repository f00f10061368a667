package peer

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/peer/admission"
	"anet.dev/anet/pkg/store"
)

// The wire-format doc states every limit an implementer meets; this keeps it equal to the
// figures the code uses (a figure changed in one place fails here).
func TestDocStatesTheLimits(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", " ")), " ")
	l, r := admission.DefaultLimits, DefaultRates
	perSecond := func(x admission.Rate) string {
		return fmt.Sprintf("%d at once, %g a second after that", x.Burst, x.PerMinute/60)
	}
	perMinute := func(x RateLimit) string { return fmt.Sprintf("%d at once, %g a minute", x.Burst, x.PerMinute) }
	secs := func(d time.Duration) string { return fmt.Sprintf("%g s", d.Seconds()) }
	mib := func(n int64) string { return fmt.Sprintf("(default %s)", limits.Bytes(n)) }
	want := []string{
		"new connections per source " + perSecond(l.AcceptPerSource),
		"together " + perSecond(l.AcceptStrangers),
		fmt.Sprintf("handshakes in progress per source %d", l.PendingPerSource),
		fmt.Sprintf("handshakes in progress, shared %d", l.Pending),
		fmt.Sprintf("handshakes in progress, vouched %d more", l.PendingVouched),
		fmt.Sprintf("time to complete the handshake %s; %s while", secs(l.Handshake), secs(l.HandshakePressed)),
		fmt.Sprintf("connections per key %d", l.PerIdentity),
		fmt.Sprintf("connections of strangers %d, at most %d per source", l.Strangers, l.StrangersPerSource),
		fmt.Sprintf("connections of known and trusted %d", l.Peers),
		fmt.Sprintf("idle between frames %g min", idleTimeout.Minutes()),
		fmt.Sprintf("closed after %s while", secs(l.IdlePressed)),
		fmt.Sprintf("once its header came %s; writing an ack %s", secs(frameTimeout), secs(writeTimeout)),
		fmt.Sprintf("one summary line every %g seconds", summaryEvery.Seconds()),
		fmt.Sprintf("at most %d individual lines", detailLines),
		"trusted key " + perMinute(r.Trusted),
		"known key " + perMinute(r.Known),
		"stranger key " + perMinute(r.Stranger),
		"per source " + perMinute(r.StrangerSource),
		"all strangers " + perMinute(r.Strangers),
		fmt.Sprintf("its text's bytes plus %d", store.TaskOverhead),
		"stranger_pending_max " + mib(limits.StrangerPendingBytes),
		"strangers_pending_max " + mib(limits.StrangersPendingBytes),
		"disk_free_min " + mib(limits.DiskFreeMinBytes),
		fmt.Sprintf("in the last %g hours", vouchFor.Hours()),
	}
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("doc.go does not say %q", w)
		}
	}
}
