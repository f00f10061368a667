package node

import (
	"net/http/httptest"
	"strings"
	"testing"

	"anet.dev/anet/pkg/reasons"
)

// TestAddPeerRefusesBadAddrC4: the control API handler behind `anet peer add` refuses an
// address outside the rule with bad_peer_addr naming the field, before anything is stored
// (the sender would retry such an address forever).
func TestAddPeerRefusesBadAddrC4(t *testing.T) {
	const aid = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"
	for _, addr := range []string{"my host:7420", "bad_host!:7420", "a..b:7420", strings.Repeat("a", 300) + ":7420"} {
		t.Run(addr[:min(len(addr), 20)], func(t *testing.T) {
			body := `{"aid":"` + aid + `","addr":"` + addr + `"}`
			r := httptest.NewRequest("POST", "/v1/peers", strings.NewReader(body))
			_, err := (&Node{}).addPeer(r)
			if reasons.CodeOf(err) != reasons.BadPeerAddr || !strings.Contains(err.Error(), "addr: ") {
				t.Fatalf("addPeer(%q) = %v, want %s naming addr", addr, err, reasons.BadPeerAddr)
			}
		})
	}
}
