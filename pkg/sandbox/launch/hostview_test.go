package launch

import "testing"

// TestCheckAgentTree: a tree that overlaps a hidden dir, holds the operator's home or is too
// broad is refused (S3, F3).
func TestCheckAgentTree(t *testing.T) {
	hidden := []string{"/home/op/.local/share/anet", "/home/op/.config/anet", "/run/user/1000/anet"}
	cases := []struct {
		tree string
		ok   bool
	}{
		{"/home/op/.local/share/claude/versions/2.1", true},
		{"/opt/codex", true},
		{"/home/op/.local/share", false}, // contains the data dir
		{"/home/op/.local/share/anet/agents", false},
		{"/home/op", false}, // the operator's home
		{"/home", false},
		{"/", false},
		{"/run/user/1000", false},
	}
	for _, c := range cases {
		t.Run(c.tree, func(t *testing.T) {
			err := CheckAgentTree(c.tree, hidden, "/home/op")
			if (err == nil) != c.ok {
				t.Fatalf("CheckAgentTree(%q) = %v, want ok=%v", c.tree, err, c.ok)
			}
		})
	}
}
