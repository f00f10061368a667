package node

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/sandbox"
)

// maxAgentOutput bounds what anetd reads back of an agent's stdout or stderr. The agent
// writes into a memfd charged to its own run; anetd reads at most this much.
const maxAgentOutput = 1 << 20

// SandboxClient drives anet-sandboxd. It is the only way anetd gets a process started: anetd
// itself never forks anything but its two helpers (docs/architecture.md rule 1).
type SandboxClient struct{ sup *privsep.Supervisor }

// Probe asks for the sandbox probe. A helper that is down is an unavailable sandbox.
func (c SandboxClient) Probe(ctx context.Context) (sandbox.ProbeResult, error) {
	var res sandbox.ProbeResult
	if _, err := c.sup.Call(ctx, sandbox.MethodProbe, nil, &res); err != nil {
		return sandbox.ProbeResult{}, err
	}
	return res, nil
}

// Run starts spec through anet-sandboxd and waits for it to end. Cancelling ctx stops the
// run. A run that cannot start returns an error with a reason code (sandbox_unavailable,
// sandbox_start_failed, helper_down, ...): nothing ran.
func (c SandboxClient) Run(ctx context.Context, spec sandbox.Spec) (sandbox.RunResult, error) {
	stdout, err := memfd("anet-stdout")
	if err != nil {
		return sandbox.RunResult{}, err
	}
	defer stdout.Close()
	stderr, err := memfd("anet-stderr")
	if err != nil {
		return sandbox.RunResult{}, err
	}
	defer stderr.Close()
	var out sandbox.WireOutcome
	if _, err := c.sup.Call(ctx, sandbox.MethodRun, sandbox.RunRequest{Spec: spec}, &out, stdout, stderr); err != nil {
		if ctx.Err() != nil {
			// The request died with our context; make sure the run does too.
			sctx, cancel := context.WithTimeout(context.Background(), 5e9)
			c.sup.Call(sctx, sandbox.MethodRunStop, sandbox.StopRequest{ID: spec.ID}, nil)
			cancel()
		}
		return sandbox.RunResult{}, err
	}
	return sandbox.RunResult{Outcome: out, Stdout: readCapped(stdout), Stderr: readCapped(stderr)}, nil
}

func memfd(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

func readCapped(f *os.File) []byte {
	b, _ := io.ReadAll(io.NewSectionReader(f, 0, maxAgentOutput))
	return b
}
