package vm

import "testing"

// TestGuestConfigValidate: the guest init refuses a config that would run the agent as root
// or hand it loader variables (V2, S5).
func TestGuestConfigValidate(t *testing.T) {
	ok := GuestConfig{Argv: []string{"/bin/true"}, UID: 1000, GID: 1000, Tasks: 256, Memory: 1 << 30, FileSize: 1 << 30, TmpBytes: 1 << 30,
		Shares: []GuestShare{{Tag: "work", Mount: "/work"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, f := range map[string]func(*GuestConfig){
		"root agent":       func(c *GuestConfig) { c.UID = 0 },
		"root group":       func(c *GuestConfig) { c.GID = 0 },
		"relative program": func(c *GuestConfig) { c.Argv = []string{"sh"} },
		"loader variable":  func(c *GuestConfig) { c.Env = []string{"LD_PRELOAD=/x.so"} },
		"share over root":  func(c *GuestConfig) { c.Shares = []GuestShare{{Tag: "x", Mount: "/"}} },
		"unclean mount":    func(c *GuestConfig) { c.Shares = []GuestShare{{Tag: "x", Mount: "/a/../etc"}} },
		"no task limit":    func(c *GuestConfig) { c.Tasks = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			c := ok
			f(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("Validate = nil, want an error")
			}
		})
	}
}
