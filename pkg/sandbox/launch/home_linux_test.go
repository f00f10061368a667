package launch

import (
	"os/user"
	"testing"
)

// S8: anet-sandboxd serving anetd has an environment built from nothing, without HOME; its
// self-test still plants the canaries in the operator's own home, the one the password
// database names, and with HOME set it uses HOME.
func TestOperatorHomeWithoutHOMES8(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Fatalf("this user has no home in the password database (%v): the self-test of a helper started by anetd could not plant its canaries", err)
	}
	t.Setenv("HOME", "")
	if got, err := operatorHome(); err != nil || got != u.HomeDir {
		t.Fatalf("operatorHome() without HOME = %q, %v; want %q", got, err, u.HomeDir)
	}
	t.Setenv("HOME", "/home/elsewhere")
	if got, err := operatorHome(); err != nil || got != "/home/elsewhere" {
		t.Fatalf("operatorHome() with HOME = %q, %v; want HOME", got, err)
	}
}
