package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/control"
)

// C4: the dashboard follows dashboard.listen: off, then on a port another program holds (a
// warning in status, the node runs on, `anet dashboard` says why), then on a free port (a
// login URL for it), moved by a change, and off again (`dashboard_off`).
func TestDashboardFollowsItsSettingC4(t *testing.T) {
	n := &Node{log: slog.New(slog.DiscardHandler)}
	n.control = control.NewServer("unused", n.log)
	n.dashboardRoutes(n.control)
	defer n.stopDashboard()
	ctx := context.Background()
	login := func() (control.DashboardLogin, error) {
		var l control.DashboardLogin
		err := n.control.Call(ctx, "POST", "/v1/dashboard/login", struct{}{}, &l)
		return l, err
	}
	code := func(err error) string {
		var re *control.RemoteError
		if errors.As(err, &re) {
			return string(re.Code)
		}
		return ""
	}

	n.applyDashboard(config.Dashboard{})
	if _, err := login(); code(err) != string(DashboardOff) {
		t.Fatalf("login with the dashboard off = %v, want %s", err, DashboardOff)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	n.applyDashboard(config.Dashboard{Listen: taken.Addr().String()})
	addr, warnings := n.dashboardStatus()
	if addr != "" || len(warnings) != 1 || warnings[0].Code != string(DashboardListenFailed) || !strings.Contains(warnings[0].Detail, taken.Addr().String()) {
		t.Fatalf("status on a taken port = %q, %+v, want the dashboard_listen_failed warning naming the address", addr, warnings)
	}
	if _, err := login(); code(err) != string(DashboardListenFailed) {
		t.Fatalf("login while it cannot listen = %v, want %s", err, DashboardListenFailed)
	}

	for range 2 { // on a free port, then moved to another
		free := freeLoopbackPort(t)
		n.applyDashboard(config.Dashboard{Listen: free})
		if addr, warnings := n.dashboardStatus(); addr != free || len(warnings) != 0 {
			t.Fatalf("status = %q, %+v, want the dashboard on %s and no warning", addr, warnings, free)
		}
		l, err := login()
		if err != nil || !strings.HasPrefix(l.URL, "http://"+free+"/login?code=") {
			t.Fatalf("login = %+v, %v, want a URL on %s", l, err, free)
		}
		resp, err := http.Get(l.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The redirect lost the cookie (no jar): the page itself says "not logged in", which
		// proves the code was taken and the dashboard answers on the new address.
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET the login URL = %s, want it spent and the redirect to / (401 without a jar)", resp.Status)
		}
	}
	n.applyDashboard(config.Dashboard{})
	if addr, _ := n.dashboardStatus(); addr != "" {
		t.Fatalf("status after dashboard.listen was emptied = %q, want off", addr)
	}
	if _, err := login(); code(err) != string(DashboardOff) {
		t.Fatalf("login after the dashboard was turned off = %v, want %s", err, DashboardOff)
	}
}

func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
