//go:build !linux

package egress

import "net"

// splicer is Linux only: elsewhere every tunnel copies through a buffer.
type splicer struct{}

func newSplicer(net.Conn, net.Conn) *splicer { return nil }

func (t *tunnel) splicePump(int, net.Conn, net.Conn, *budget, *splicer) {}
