//go:build anettest && linux

// Command benchcompare is `make bench-compare`: it measures the node next to what users would
// pick instead, in one run on one machine, and prints one line per metric — ours, each anchor,
// the ratio, the aim and whether it is met. The anchors (bare and hardened bwrap,
// sandbox-runtime, httputil.ReverseProxy, the Portkey gateway, smokescreen, tinyproxy) are
// installed by the Makefile at pinned versions into -anchors; an anchor that is missing there
// is reported as missing, never guessed. Nothing here is a test: the figures go to the README.
//
// It is built with the anettest tag because it points the model hosts at a loopback fake
// upstream (served behind a throw-away CA) through the dialer's test hook; release binaries
// have no such hook.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"
)

type config struct {
	anchors string // where the Makefile installed the anchors
	bin     string // the node's binaries
	only    map[string]bool
	rounds  int
	// goPid1 is a prebuilt empty Go pid 1 (internal/benchcompare/gopid1), for a host with no
	// Go toolchain (the hosts rig's guest); empty: built here.
	goPid1 string
}

func main() {
	var cfg config
	var only string
	var asJSON bool
	flag.StringVar(&cfg.anchors, "anchors", "", "`DIR` where make bench-compare installed the anchors")
	flag.StringVar(&cfg.bin, "bin", "bin", "`DIR` of the node's binaries (make build)")
	flag.StringVar(&only, "only", "", "comma-separated sections to run: launch, model, tunnel, evidence, rss")
	flag.IntVar(&cfg.rounds, "rounds", 0, "repetitions per measurement (0: each section's default)")
	flag.StringVar(&cfg.goPid1, "gopid1", "", "a prebuilt empty Go pid 1 (`FILE`) for the launch floor, where no Go toolchain is (default: build it)")
	flag.BoolVar(&asJSON, "json", false, "print the metrics as JSON")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to `FILE`")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-compare:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if only != "" {
		cfg.only = map[string]bool{}
		for _, s := range strings.Split(only, ",") {
			cfg.only[strings.TrimSpace(s)] = true
		}
	}
	// Quiet: the node's own log lines are not the output.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := run(cfg, asJSON, os.Stdout); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(1)
	}
}

type section struct {
	name string
	run  func(config, *report) error
}

func run(cfg config, asJSON bool, out io.Writer) error {
	rep := &report{}
	sections := []section{
		{"launch", runLaunch},
		{"model", runModel},
		{"tunnel", runTunnel},
		{"evidence", runEvidence},
		{"rss", runRSS},
	}
	start := time.Now()
	for _, s := range sections {
		if cfg.only != nil && !cfg.only[s.name] {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench-compare: %s…\n", s.name)
		if err := s.run(cfg, rep); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep.metrics)
	}
	host, _ := os.Hostname()
	fmt.Fprintf(out, "# %s, %s/%s, %d CPUs, %s, %s (%.0f s)\n", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), kernel(), time.Since(start).Seconds())
	rep.print(out)
	return nil
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return "Linux " + strings.TrimSpace(string(b))
}
