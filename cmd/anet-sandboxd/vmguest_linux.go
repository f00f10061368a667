//go:build !nobackend

package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/sandbox/vm"
)

func init() { commands = append(commands, vmGuestCommand(), vmAgentCommand()) }

// vmGuestCommand is pid 1 of a micro-VM (V1); the guest kernel starts it, not people.
func vmGuestCommand() *cli.Command {
	return &cli.Command{
		Name:   vm.GuestCommand,
		Hidden: true,
		Usage:  "pid 1 of a micro-VM guest: mount the shares, relay loopback over the link, run the agent",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "link", Value: string(vm.TransportSerial)},
			&cli.UintFlag{Name: "vsock-port"},
		},
		Action: func(c *cli.Context) error {
			_ = vm.Guest(vm.Transport(c.String("link")), uint32(c.Uint("vsock-port")), os.Stderr)
			return cli.Exit("", 1) // not reached: Guest powers the VM off
		},
	}
}

// vmAgentCommand is the agent's init inside the guest, behind the agent's wall (V2).
func vmAgentCommand() *cli.Command {
	return &cli.Command{
		Name:   vm.AgentCommand,
		Hidden: true,
		Usage:  "inside a micro-VM guest: drop to the agent's wall and run the agent",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "uid"}, &cli.IntFlag{Name: "gid"}, &cli.Int64Flag{Name: "file-size"},
		},
		Action: func(c *cli.Context) error {
			return cli.Exit("", vm.AgentInit(vm.AgentOptions{
				UID: c.Int("uid"), GID: c.Int("gid"), FileSize: c.Int64("file-size"),
				Argv: c.Args().Slice(), Stderr: os.Stderr,
			}))
		},
	}
}
