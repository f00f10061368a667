package egress

import (
	"fmt"
	"strings"
	"testing"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// R1, H2, E9: the sentences that state a figure are built from it: the catalog states the
// figures in force, and a changed table changes the sentences with it.
func TestSentencesFollowTheFiguresR1H2(t *testing.T) {
	for _, e := range figureEntries(DefaultLimits()) {
		if got := reasons.Text(e.Code); got != e.Text {
			t.Errorf("catalog text of %s = %q, want the sentence built from the figures %q", e.Code, got, e.Text)
		}
	}
	l := DefaultLimits()
	l.OpenTunnels, l.TotalTunnels, l.SentBytes, l.ReceivedBytes = 3, 9, 5*limits.KiB, 7*limits.GiB
	want := map[reasons.Code]string{
		TunnelLimit: "(3 open at once, 9 in all)",
		BytesLimit:  "(5 KiB sent, 7 GiB received)",
	}
	for _, e := range figureEntries(l) {
		if w, ok := want[e.Code]; ok && !strings.Contains(e.Text, w) {
			t.Errorf("with %+v, %s = %q, want it to say %q", l, e.Code, e.Text, w)
		}
		delete(want, e.Code)
	}
	if len(want) != 0 {
		t.Errorf("figureEntries has no sentence for %v", want)
	}
	// The allow-list's sentence (pkg/config owns the rule) states its cap too.
	if !strings.Contains(reasons.Text(AllowListRefuse), fmt.Sprintf("at most %d entries", limits.AllowListEntries)) {
		t.Errorf("%s = %q, want it to state the cap %d", AllowListRefuse, reasons.Text(AllowListRefuse), limits.AllowListEntries)
	}
}
