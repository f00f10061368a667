//go:build !anettest

package direct

func redirect(addr string) string { return addr }
