package node

import (
	"context"
	"net/http"
	"sync"
	"time"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/dashboard"
	"anet.dev/anet/pkg/reasons"
)

// Reason codes of the dashboard (C4).
const (
	// DashboardOff: `anet dashboard` asked for a login while dashboard.listen is empty.
	DashboardOff reasons.Code = "dashboard_off"
	// DashboardListenFailed: dashboard.listen is set but could not be bound; the rest of
	// the node runs on.
	DashboardListenFailed reasons.Code = "dashboard_listen_failed"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: DashboardOff, Kind: reasons.KindConfig,
			Text: "the dashboard is off; set dashboard.listen (e.g. anet config set dashboard.listen 127.0.0.1:7421) and run anet dashboard again", Requirement: "C4"},
		reasons.Entry{Code: DashboardListenFailed, Kind: reasons.KindWarning,
			Text: "the dashboard could not listen on dashboard.listen (the port is taken, or the address is not this machine's); the node runs without it: pick another port and run anet reload", Requirement: "C4"},
	)
}

// dashState is the dashboard as the node runs it: started when dashboard.listen is set,
// moved when a reload changes it, stopped with the node.
type dashState struct {
	apply sync.Mutex // one change at a time (start-up and reloads)

	mu     sync.Mutex // guards the fields that follow; never held while a server stops
	srv    *dashboard.Server
	listen string // the setting srv (or err) is for
	err    error  // why it could not listen on listen
}

// applyDashboard makes the dashboard follow c: started, stopped or moved when Listen
// changed (an address that failed is tried again), its metrics token file switched when
// only that changed. A listener that cannot bind is a warning in status, never a failure of
// the node.
func (n *Node) applyDashboard(c config.Dashboard) {
	d := &n.dash
	d.apply.Lock()
	defer d.apply.Unlock()
	d.mu.Lock()
	if d.srv != nil && d.listen == c.Listen {
		d.srv.SetMetricsTokenFile(c.MetricsTokenFile)
		d.mu.Unlock()
		return
	}
	old := d.srv
	d.srv, d.listen, d.err = nil, c.Listen, nil
	d.mu.Unlock()
	// Outside d.mu: the old dashboard's requests in flight read status, which reads d.
	closeDashboard(old)
	if c.Listen == "" {
		return
	}
	srv, err := dashboard.New(dashboard.Options{Node: n.control, Metrics: n.MetricsHandler(), MetricsTokenFile: c.MetricsTokenFile, Log: n.log.With("part", "dashboard")})
	if err == nil {
		err = srv.Listen(c.Listen)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		n.log.Warn("dashboard not started", "code", DashboardListenFailed, "err", err)
		d.err = err
		return
	}
	d.srv = srv
}

// stopDashboard ends the dashboard and its live pages.
func (n *Node) stopDashboard() {
	d := &n.dash
	d.apply.Lock()
	defer d.apply.Unlock()
	d.mu.Lock()
	old := d.srv
	d.srv = nil
	d.mu.Unlock()
	closeDashboard(old)
}

func closeDashboard(s *dashboard.Server) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Close(ctx)
}

// dashboardStatus is the dashboard's address for status, and its warning while it could
// not listen.
func (n *Node) dashboardStatus() (string, []control.Warning) {
	d := &n.dash
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return "", []control.Warning{{Code: string(DashboardListenFailed), Text: reasons.Text(DashboardListenFailed), Detail: d.err.Error()}}
	}
	if d.srv != nil {
		return d.srv.Addr(), nil
	}
	return "", nil
}

func (n *Node) dashboardRoutes(s *control.Server) {
	s.Handle("POST", "/v1/dashboard/login", func(*http.Request) (any, error) {
		d := &n.dash
		d.mu.Lock()
		srv, err := d.srv, d.err
		d.mu.Unlock()
		switch {
		case err != nil:
			return nil, reasons.New(DashboardListenFailed, err.Error())
		case srv == nil:
			return nil, reasons.New(DashboardOff, "dashboard.listen is empty")
		}
		return srv.Login()
	})
}
