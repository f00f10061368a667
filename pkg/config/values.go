package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ParseDuration accepts a Go duration ("168h", "90m") or a whole number of days ("7d").
func ParseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok && days != "" && strings.TrimLeft(days, "0123456789") == "" {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > int64(math.MaxInt64/(24*time.Hour)) {
			return 0, fmt.Errorf("%q is too long", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (allowed: a Go duration such as 168h or 90m, or whole days such as 7d)", s)
	}
	return d, nil
}

// FormatDuration writes d so that ParseDuration reads it back: whole hours as "168h".
func FormatDuration(d time.Duration) string {
	if d != 0 && d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}

// checkListen validates a listener address: host:port with a port 1-65535 and a host that is
// empty (all interfaces), an IP address or a DNS name.
func checkListen(s string) error {
	if s == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:7420, [::1]:7420, or \"\" to disable)", s)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("%q has an invalid port (allowed: 1-65535)", s)
	}
	if host == "" || host == "localhost" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !isLDHName(host) {
		return fmt.Errorf("%q: host must be an IP address, a DNS name or empty (all interfaces)", s)
	}
	return nil
}

// checkAbsPath requires an absolute, clean-able path without control characters.
func checkAbsPath(s string) error {
	if s == "" {
		return nil
	}
	if hasControl(s) {
		return fmt.Errorf("must be a path without control characters")
	}
	if !filepath.IsAbs(s) {
		return fmt.Errorf("%q is not an absolute path (~ and $VARS are not expanded)", s)
	}
	return nil
}

// checkModel keeps model identifiers to one printable token.
func checkModel(s string) error {
	if len(s) > 200 {
		return fmt.Errorf("is longer than 200 characters")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%q must be a model identifier without spaces", s)
		}
	}
	return nil
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// isLDHName reports whether s is letters-digits-hyphen labels (either case) separated by dots.
func isLDHName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isLDHLabel(strings.ToLower(l)) {
			return false
		}
	}
	return true
}

func isLDHLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// CheckDashboardListen validates dashboard.listen: "" (off) or a loopback address with a
// port 1-65535, written 127.0.0.1:PORT, [::1]:PORT or localhost:PORT. The dashboard shows
// peers' text and acts on the node for whoever holds its session, so it is never offered to
// another machine: any other host, a name included, is refused.
func CheckDashboardListen(s string) error {
	if s == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("%q is not host:port (allowed: 127.0.0.1:PORT, [::1]:PORT, localhost:PORT, or \"\" for off)", s)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 || strconv.FormatUint(p, 10) != port {
		return fmt.Errorf("%q has an invalid port (allowed: 1-65535)", s)
	}
	switch host {
	case "127.0.0.1", "::1", "localhost":
		return nil
	}
	return fmt.Errorf("%q is not a loopback address (allowed: 127.0.0.1:PORT, [::1]:PORT, localhost:PORT): the dashboard is for this machine only", s)
}
