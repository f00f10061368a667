package main

import (
	"fmt"
	"net/url"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"anet.dev/anet/pkg/control"
	"anet.dev/anet/pkg/peeraddr"
	"anet.dev/anet/pkg/termsafe"
)

func peerCommand() *cli.Command {
	return &cli.Command{
		Name:  "peer",
		Usage: "the nodes this node can send tasks to (aid and address)",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a peer, or change its address",
				ArgsUsage: "AID HOST:PORT",
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return fmt.Errorf("usage: anet peer add AID HOST:PORT")
					}
					// Checked here too, so a bad address is refused with its reason even
					// when anetd is not running; anetd checks it again.
					if err := peeraddr.Check("addr", c.Args().Get(1)); err != nil {
						return err
					}
					var p control.Peer
					if err := call(c, "POST", "/v1/peers", control.PeerRequest{AID: c.Args().Get(0), Addr: c.Args().Get(1)}, &p); err != nil {
						return err
					}
					fmt.Printf("peer %s at %s\n", termsafe.Line(p.AID), termsafe.Line(p.Addr))
					return nil
				},
			},
			{
				Name:      "remove",
				Usage:     "remove a peer",
				ArgsUsage: "AID",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: anet peer remove AID")
					}
					if err := call(c, "DELETE", "/v1/peers/"+url.PathEscape(c.Args().First()), nil, nil); err != nil {
						return err
					}
					fmt.Printf("peer %s removed\n", termsafe.Line(c.Args().First()))
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "list peers",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					var ps []control.Peer
					if err := call(c, "GET", "/v1/peers", nil, &ps); err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(ps)
					}
					w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "AID\tADDRESS\tTRUSTED")
					for _, p := range ps {
						fmt.Fprintf(w, "%s\t%s\t%v\n", termsafe.Line(p.AID), termsafe.Line(p.Addr), p.Trusted)
					}
					return w.Flush()
				},
			},
		},
	}
}

func trustCommand() *cli.Command {
	return &cli.Command{
		Name:  "trust",
		Usage: "the peers whose tasks the policy treats as trusted (auto_reply.trusted)",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "trust a peer",
				ArgsUsage: "AID",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: anet trust add AID")
					}
					if err := call(c, "POST", "/v1/trust", control.TrustRequest{AID: c.Args().First()}, nil); err != nil {
						return err
					}
					fmt.Printf("%s is trusted\n", termsafe.Line(c.Args().First()))
					return nil
				},
			},
			{
				Name:      "remove",
				Usage:     "stop trusting a peer",
				ArgsUsage: "AID",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("usage: anet trust remove AID")
					}
					if err := call(c, "DELETE", "/v1/trust/"+url.PathEscape(c.Args().First()), nil, nil); err != nil {
						return err
					}
					fmt.Printf("%s is no longer trusted\n", termsafe.Line(c.Args().First()))
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "list trusted peers",
				Flags: []cli.Flag{jsonFlag},
				Action: func(c *cli.Context) error {
					var ts []control.TrustEntry
					if err := call(c, "GET", "/v1/trust", nil, &ts); err != nil {
						return err
					}
					if c.Bool("json") {
						return printJSON(ts)
					}
					for _, t := range ts {
						fmt.Println(termsafe.Line(t.AID))
					}
					return nil
				},
			},
		},
	}
}
