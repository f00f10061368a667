package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/nodedirs"
	"anet.dev/anet/pkg/privsep"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/launch"
)

// isolationFlags choose the backend for serve, exec, probe and self-test, which behave the
// same whichever it is (V1).
func isolationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "isolation", Usage: fmt.Sprintf("`BACKEND` of sandboxed runs, one of %s (default: the first)", strings.Join(launch.Backends(), ", "))},
		&cli.BoolFlag{Name: "vm-allow-tcg", Usage: "let the vm backend use QEMU's software emulation when KVM is unusable (slow)"},
		&cli.StringFlag{Name: "vm-cache", Usage: "`DIR` of the vm backend's guest kernel and initramfs (default <cache>/anet/vm)"},
	}
}

// launchOptions are the Launcher's options from the isolation flags.
func launchOptions(c *cli.Context, log *slog.Logger) launch.Options {
	o := launch.Options{Backend: c.String("isolation"), Log: log, CacheDir: c.String("vm-cache"), AllowEmulation: c.Bool("vm-allow-tcg")}
	// A passing probe is kept for the next process too (S7: exec is a new process each time),
	// in the runtime directory that every run has hidden.
	if dirs, err := nodedirs.Default(nil); err == nil {
		o.ProbeCacheDir = filepath.Join(dirs.Runtime, "probe")
		// serve gets the vm cache from anetd (its environment is clean); the others find it.
		// A backend that needs it and has none says so.
		if o.CacheDir == "" {
			o.CacheDir = filepath.Join(dirs.Cache, "vm")
		}
	}
	return o
}

// launcher is what the subcommands use: the seam, and Settle, which a subcommand calls
// before it exits, since a run's outcome comes before the removal of its dirs and cgroups.
type launcher interface {
	sandbox.Launcher
	// StartPlan is Start for a plan exec has prepared itself (launch.Prepare).
	StartPlan(ctx context.Context, p *launch.Plan, stdio sandbox.Stdio) (sandbox.Run, error)
	Settle()
}

// newLauncher is the Launcher every subcommand uses: direct runs and the backend the flags
// name (backends_<os>.go links them). One that cannot be set up starts nothing (P2) and says
// why.
func newLauncher(c *cli.Context, log *slog.Logger) (launcher, string, error) {
	l, err := launch.New(launchOptions(c, log))
	if err != nil {
		return launch.Unavailable{Err: err}, "", err
	}
	return l, l.BackendName(), nil
}

// closeInheritedFds marks every fd above stdio that the shell (or any parent) left open as
// close-on-exec, so none reaches a run; the launcher passes its own fds explicitly.
func closeInheritedFds() { _ = privsep.CloseOnExecFrom(3) }

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
