package doctor

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// AgentVersion asks an agent's program for its version (`PROGRAM --version`, its first line);
// "" when it does not answer within a few seconds.
func AgentVersion(path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if len(line) > 80 {
		line = line[:80]
	}
	return line
}
