package dashboard

import (
	"sort"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/money"
)

// chart is a bar chart drawn on the server as inline SVG: one bar per day, its height the
// day's spend against the chart's largest. No script draws it and no style attribute is
// needed (CSP), only the stylesheet's classes.
type chart struct {
	Title  string
	Total  money.Micros
	Max    money.Micros
	Width  int
	Height int
	// Base is the y of the axis; bars stand on it.
	Base      int
	Bars      []bar
	FirstDay  string
	LastDay   string
	LabelY    int
	LastDayX  int
	MaxLabelY int
}

type bar struct {
	X, Y, W, H int
	Day        string
	Spent      money.Micros
}

// Chart geometry, in SVG user units.
const (
	chartWidth  = 600
	chartHeight = 140
	chartTop    = 16
	chartBottom = 20
	chartGap    = 2
)

// spendCharts draws the days' total and one chart per peer that spent in them, the peers
// ordered by what they spent.
func spendCharts(h control.SpendHistory) (total chart, peers []chart) {
	n := len(h.Days)
	all := make([]money.Micros, n)
	perPeer := map[string][]money.Micros{}
	days := make([]string, n)
	for i, d := range h.Days {
		days[i] = d.Day
		all[i] = d.Spent
		for _, p := range d.Peers {
			if perPeer[p.Peer] == nil {
				perPeer[p.Peer] = make([]money.Micros, n)
			}
			perPeer[p.Peer][i] = p.Spent
		}
	}
	total = drawChart("All peers", days, all)
	for p, v := range perPeer {
		peers = append(peers, drawChart(p, days, v))
	}
	sort.Slice(peers, func(i, j int) bool {
		if peers[i].Total != peers[j].Total {
			return peers[i].Total > peers[j].Total
		}
		return peers[i].Title < peers[j].Title
	})
	return total, peers
}

func drawChart(title string, days []string, values []money.Micros) chart {
	c := chart{Title: title, Width: chartWidth, Height: chartHeight, Base: chartHeight - chartBottom,
		LabelY: chartHeight - 6, LastDayX: chartWidth, MaxLabelY: chartTop - 4}
	for _, v := range values {
		c.Total = money.Add(c.Total, v)
		c.Max = max(c.Max, v)
	}
	if len(days) > 0 {
		c.FirstDay, c.LastDay = days[0], days[len(days)-1]
	}
	n := len(values)
	if n == 0 {
		return c
	}
	slot := chartWidth / n
	room := c.Base - chartTop
	for i, v := range values {
		h := 0
		if c.Max > 0 && v > 0 {
			// Integer arithmetic on the amounts: a day's spend is far below the range where
			// int64 would overflow times room. A spend above zero is at least one unit high.
			h = max(1, int(int64(v)*int64(room)/int64(c.Max)))
		}
		c.Bars = append(c.Bars, bar{X: i*slot + chartGap/2, Y: c.Base - h, W: slot - chartGap, H: h, Day: days[i], Spent: v})
	}
	return c
}
