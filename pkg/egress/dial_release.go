//go:build !anettest

package egress

func redirect(addr string) string { return addr }
