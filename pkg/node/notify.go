package node

import (
	"net"
	"strings"
)

// notifyReady tells systemd (Type=notify) that the node is ready. An empty socket name means
// systemd did not ask.
func notifyReady(socket string) error {
	if socket == "" {
		return nil
	}
	addr := socket
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte("READY=1\n"))
	return err
}
