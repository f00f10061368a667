//go:build !amd64

package attack

// int80 does not exist off x86_64.
func int80(nr, a1, a2, a3 uint32) (uint32, bool) { return 0, false }
