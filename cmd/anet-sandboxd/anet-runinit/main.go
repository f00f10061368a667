//go:build linux

// Command anet-runinit is pid 1 of every bwrap run (pkg/sandbox/runinit): it relays the run's
// loopback port to its endpoint, starts the agent and reaps. anet-sandboxd binds it into each run and
// starts it there; people do not. It is its own small static program, installed beside
// anet-sandboxd, because every launch waits for it to start: it links only what runs inside
// the sandbox, so its start costs little more than an empty Go program's.
package main

import (
	"flag"
	"io"
	"os"

	"anet.dev/anet/pkg/sandbox/runinit"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("anet-runinit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", "", "endpoint `SOCK` the loopback port is relayed to")
	port := fs.Int("port", 0, "loopback `PORT` relayed to the endpoint")
	envFile := fs.String("env-file", "", "`FILE` of NUL-separated variables for the agent")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o := runinit.InitOptions{Port: *port, EnvFile: *envFile, Argv: fs.Args(), Stderr: stderr}
	if *endpoint != "" {
		o.Upstream = runinit.UnixSocket(*endpoint)
	}
	return runinit.Init(o)
}
