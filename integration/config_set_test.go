package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentConfigSetAllLandC4: `anet config set` of different keys run at the same
// time, as separate commands against a running anetd, each say what they wrote, and every
// value is in the file afterwards: no set reads the old file while another replaces it.
func TestConcurrentConfigSetAllLandC4(t *testing.T) {
	n := newNode(t, nodeOptions{})
	n.start()
	sets := [][2]string{
		{"auto_reply.sandbox.runs_per_day", "7"},
		{"auto_reply.sandbox.runs_per_peer_per_day", "3"},
		{"auto_reply.sandbox.tasks_max", "99"},
		{"auto_reply.api_timeout_seconds", "77"},
		{"auto_reply.sandbox.spend_per_day", "2.50"},
		{"log_level", "debug"},
	}
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]string, len(sets))
		for i, kv := range sets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, errOut, err := n.anet("config", "set", kv[0], kv[1])
				if err != nil || !strings.Contains(out, "written") {
					errs[i] = fmt.Sprintf("anet config set %s %s = %v\n%s%s", kv[0], kv[1], err, out, errOut)
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				t.Errorf("round %d: %s", round, e)
			}
		}
		for _, kv := range sets {
			if got := strings.TrimSpace(n.mustAnet("config", "get", kv[0])); got != kv[1] {
				t.Errorf("round %d: after concurrent sets, anet config get %s = %q, want %q (an update was lost)", round, kv[0], got, kv[1])
			}
		}
		// The next round changes every value again, so a lost update shows.
		for i := range sets {
			if strings.HasPrefix(sets[i][0], "auto_reply.sandbox.runs") {
				sets[i][1] = fmt.Sprint(round + 4 + i)
			}
		}
	}
}

// TestPeerAddRefusesBadAddressC4: `anet peer add` refuses a host name outside the rule with
// bad_peer_addr naming the field, with and without a running anetd (the CLI checks it, and
// anetd checks it again), and the peers table stays empty.
func TestPeerAddRefusesBadAddressC4(t *testing.T) {
	const aid = "anpg2vmlup4zkpsqdywejorkmlu6ib7bj242k35v7a4oiqxlieszsa"
	n := newNode(t, nodeOptions{})
	bad := []string{"my host:7420", "bad_host!:7420", "a..b:7420", strings.Repeat("a", 300) + ":7420"}
	check := func(when string) {
		for _, addr := range bad {
			out, errOut, err := n.anet("peer", "add", aid, addr)
			if err == nil || !strings.Contains(errOut, "bad_peer_addr") || !strings.Contains(errOut, "addr: ") {
				t.Errorf("%s: anet peer add %q = %v, want bad_peer_addr naming addr\n%s%s", when, addr, err, out, errOut)
			}
		}
	}
	check("anetd not running")
	n.start()
	check("anetd running")
	if out := n.mustAnet("peer", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("anet peer list after refused adds = %s, want []", out)
	}
}
