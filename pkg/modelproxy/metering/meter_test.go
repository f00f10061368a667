package metering

import (
	"testing"

	"anet.dev/anet/pkg/money"
)

// K1: Settle returns what it charged the request, which its receipt records: the reported
// usage at the prices; the estimate without usage; nothing for an error answer; and after
// Finish, the worst case Finish charged a request still in flight, or nothing for one
// reserved after it (Finish did not charge that one).
func TestSettleChargeK1(t *testing.T) {
	prices := &money.Prices{Input: 1_000_000, Output: 2_000_000, CacheWrite: 3_000_000, CacheRead: 500_000}
	m := New("m", prices, nil)
	worst := m.WorstCase(300, 50) // 100 input at the top input price + 50 output = 300 + 100
	if worst != 400 {
		t.Fatalf("worst case = %d, want 400", worst)
	}
	reserve := func() *Reservation {
		t.Helper()
		r, ref := m.Reserve(worst, 300, 50)
		if ref != nil {
			t.Fatalf("Reserve: %v", ref)
		}
		return r
	}
	tokens := money.Tokens{Input: 10, Output: 20, CacheWrite: 1, CacheRead: 2, Reasoning: 5}
	answered := Outcome{billed: true, final: true, tokens: tokens}
	if c := m.Settle(reserve(), answered); c.Tokens != tokens || c.Cost != 10+40+3+1 {
		t.Fatalf("answered: charge %+v, want the tokens at the prices (54)", c)
	}
	if c := m.Settle(reserve(), Outcome{billed: true}); c.Cost != worst || c.Tokens != (money.Tokens{}) {
		t.Fatalf("no usage: charge %+v, want the estimate %d", c, worst)
	}
	if c := m.Settle(reserve(), Outcome{}); c != (Charge{}) {
		t.Fatalf("not billed: charge %+v, want nothing", c)
	}
	open := reserve()
	m.Finish(0)
	late := reserve()
	if c := m.Settle(open, answered); c != (Charge{Cost: worst}) {
		t.Fatalf("in flight at Finish: charge %+v, want its worst case %d, as Finish charged it", c, worst)
	}
	if c := m.Settle(late, answered); c != (Charge{}) {
		t.Fatalf("reserved after Finish: charge %+v, want nothing (Finish did not charge it)", c)
	}
	if s := m.Snapshot(); s.Cost != 54+worst+worst {
		t.Fatalf("run's spend %d, want %d", s.Cost, 54+worst+worst)
	}
}
