//go:build !linux

package egress

import "net"

// waitQueued is not available here: the caller copies through a buffer.
func waitQueued(net.Conn) (int, bool, error) { return 0, false, nil }
