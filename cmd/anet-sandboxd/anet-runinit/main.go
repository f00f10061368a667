//go:build linux

// Command anet-runinit is pid 1 of every bwrap run (pkg/sandbox/runinit): it relays the run's
// loopback port to its endpoint, runs the probe's checks first when the launcher gates the run
// (pkg/sandbox/gate/inside), starts the agent and reaps. anet-sandboxd binds it into each run
// and starts it there; people do not. It is its own small static program, installed beside
// anet-sandboxd, because every launch waits for it to start: it links only what runs inside
// the sandbox, so its start costs little more than an empty Go program's.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"anet.dev/anet/pkg/sandbox/attack"
	"anet.dev/anet/pkg/sandbox/gate/inside"
	"anet.dev/anet/pkg/sandbox/runinit"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	// The userns check re-executes this program as a child that must exit at once (when the
	// sandbox lets it start at all).
	if len(args) == 3 && args[0] == attack.Command && args[1] == attack.ChildFlag {
		return attack.ChildMain(args[2], os.Stdout)
	}
	fs := flag.NewFlagSet("anet-runinit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", "", "endpoint `SOCK` the loopback port is relayed to")
	port := fs.Int("port", 0, "loopback `PORT` relayed to the endpoint")
	envFile := fs.String("env-file", "", "`FILE` of NUL-separated variables for the agent")
	hold := fs.Int("hold", -1, "descriptor `FD` to read the launcher's release from before the agent starts")
	fsize := fs.Int64("fsize", 0, "the run's RLIMIT_FSIZE in `BYTES` (RLIMIT_CORE is always set to 0)")
	gateFDs := fs.String(inside.FlagFDs, "", "`CTL,ECHO` descriptors: run the probe's checks before the agent")
	gateTargets := fs.String(inside.FlagTargets, "", "what the probe's checks aim at (`JSON`)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "anet-runinit: "+format+"\n", a...) }
	o := runinit.InitOptions{Port: *port, EnvFile: *envFile, Argv: fs.Args(), Stderr: stderr, FileSize: *fsize}
	if *hold >= 0 {
		o.Hold = os.NewFile(uintptr(*hold), "anet-hold")
	}
	if *endpoint != "" {
		o.Upstream = runinit.UnixSocket(*endpoint)
	}
	if *gateFDs != "" {
		g, err := inside.New(*gateFDs, *gateTargets, logf)
		if err != nil {
			logf("%v", err)
			return runinit.ExitGated
		}
		o.Gate = g.Run
	}
	return runinit.Init(o)
}
