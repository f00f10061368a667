package node

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"time"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/money"
	"anet.dev/anet/pkg/store"
)

// The chain entries the day's spend is the sum of (K2, B5): the auto-reply engine appends
// run_counted with the run's cost_micros (pkg/autoreply budget.go, spend.go). The history
// reads them in any build, so a node built without auto-reply still shows what its chain
// holds.
const (
	kindRunCounted   = "run_counted"
	detailCostMicros = "cost_micros"
)

// maxSpendDays bounds GET /v1/spend/history's days.
const maxSpendDays = 366

// spendHistory answers GET /v1/spend/history?days=N (default 30): what counted runs cost
// per local day and peer, today last (K1, K2).
func (n *Node) spendHistory(r *http.Request) (any, error) {
	days := 30
	if s := r.URL.Query().Get("days"); s != "" {
		d, err := strconv.Atoi(s)
		if err != nil || d < 1 || d > maxSpendDays {
			return nil, control.BadRequestError("days: %q is not a number of days from 1 to %d", s, maxSpendDays)
		}
		days = d
	}
	return spendHistoryOf(r.Context(), n.store, time.Now(), days)
}

// spendHistoryOf sums the chain's run_counted entries per local calendar day (the days of
// the budget, B1) for the days days up to the one that holds now.
func spendHistoryOf(ctx context.Context, st *store.Store, now time.Time, days int) (control.SpendHistory, error) {
	out := control.SpendHistory{Days: []control.SpendDay{}}
	y, m, d := now.Date()
	for i := days - 1; i >= 0; i-- {
		from := time.Date(y, m, d-i, 0, 0, 0, 0, now.Location())
		to := time.Date(y, m, d-i+1, 0, 0, 0, 0, now.Location())
		f := store.CountFilter{Kinds: []string{kindRunCounted}, From: from, To: to}
		byPeer, err := st.SumByPeer(ctx, f, detailCostMicros)
		if err != nil {
			return control.SpendHistory{}, err
		}
		runs, err := st.Count(ctx, f)
		if err != nil {
			return control.SpendHistory{}, err
		}
		day := control.SpendDay{Day: from.Format("2006-01-02"), Start: from, Runs: runs, Peers: []control.PeerDay{}}
		for p, v := range byPeer {
			day.Spent = money.Add(day.Spent, money.Micros(v))
			day.Peers = append(day.Peers, control.PeerDay{Peer: p, Spent: money.Micros(v)})
		}
		sort.Slice(day.Peers, func(i, j int) bool { return day.Peers[i].Peer < day.Peers[j].Peer })
		out.Days = append(out.Days, day)
	}
	return out, nil
}
