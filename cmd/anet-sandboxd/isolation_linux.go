package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/config"
	"anet.dev/anet/pkg/sandbox"
	"anet.dev/anet/pkg/sandbox/bwrap"
	"anet.dev/anet/pkg/sandbox/vm"
)

// isolationFlags choose the tier for exec, probe and self-test (V1): they behave the same
// whichever it is.
func isolationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "isolation", Value: "bwrap", Usage: "`TIER`: bwrap, or vm (a micro-VM inside the bwrap wall)"},
		&cli.BoolFlag{Name: "vm-allow-tcg", Usage: "let the vm tier use QEMU's software emulation when KVM is unusable (slow)"},
		&cli.StringFlag{Name: "vm-cache", Usage: "`DIR` of the extracted guest kernel and initramfs (default <cache>/anet/vm)"},
	}
}

// isolated is what these subcommands need of a tier.
type isolated interface {
	sandbox.Launcher
	ProbeUncached(context.Context) (sandbox.ProbeResult, error)
	SelfTest(context.Context, bwrap.SelfTestOptions) (bwrap.SelfTestResult, error)
	KillAll()
}

func newIsolated(c *cli.Context, log *slog.Logger) (isolated, error) {
	w, err := bwrap.New(bwrap.Config{Log: log})
	if err != nil {
		return nil, err
	}
	switch iso := c.String("isolation"); iso {
	case "bwrap":
		return w, nil
	case "vm":
		cache := c.String("vm-cache")
		if cache == "" {
			// serve gets it from anetd (its environment is clean); the others find it.
			paths, err := config.DefaultPaths(nil)
			if err != nil {
				return nil, err
			}
			cache = filepath.Join(paths.CacheDir, "vm")
		}
		l, err := vm.New(vm.Config{Wall: w, AllowTCG: c.Bool("vm-allow-tcg"), Log: log,
			Kernel: vm.KernelSource{CacheDir: cache}})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return l, nil
	default:
		return nil, fmt.Errorf("--isolation %q: want bwrap or vm", iso)
	}
}
