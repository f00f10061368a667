package main

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func testApp() *cli.App {
	return &cli.App{
		Name:     "anet",
		Flags:    []cli.Flag{&cli.StringFlag{Name: "config"}},
		Commands: commands(),
	}
}

// Flags are accepted after positional arguments; global flags move before the command;
// "--" and "-" keep their meaning.
func TestInterspersed(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"anet", "show", "ID", "--json"}, []string{"anet", "show", "--json", "ID"}},
		{[]string{"anet", "send", "text", "--to", "AID"}, []string{"anet", "send", "--to", "AID", "text"}},
		{[]string{"anet", "send", "--to=AID", "-"}, []string{"anet", "send", "--to=AID", "-"}},
		{[]string{"anet", "send", "--to", "AID", "--", "--json"}, []string{"anet", "send", "--to", "AID", "--", "--json"}},
		{[]string{"anet", "config", "get", "listen", "--config", "f.yaml"}, []string{"anet", "--config", "f.yaml", "config", "get", "listen"}},
		{[]string{"anet", "--config", "f.yaml", "evidence", "show", "--since", "2h", "--json"}, []string{"anet", "--config", "f.yaml", "evidence", "show", "--since", "2h", "--json"}},
		{[]string{"anet", "evidence", "show", "--kind", "x", "--bogus"}, []string{"anet", "evidence", "show", "--kind", "x", "--bogus"}},
		{[]string{"anet", "stauts", "--json"}, []string{"anet", "stauts", "--json"}},
		{[]string{"anet", "config", "set", "auto_reply.sandbox.runs_per_day", "-1"}, []string{"anet", "config", "set", "auto_reply.sandbox.runs_per_day", "-1"}},
		{[]string{"anet", "reply", "ID", "- buy milk"}, []string{"anet", "reply", "ID", "- buy milk"}},
		{[]string{"anet", "reply", "ID", "-- not a flag either"}, []string{"anet", "reply", "ID", "-- not a flag either"}},
		{[]string{"anet"}, []string{"anet"}},
	} {
		if got := interspersed(testApp(), tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// An unknown command is answered with the nearest one, or none when nothing is close.
func TestNearestCommand(t *testing.T) {
	for in, want := range map[string]string{"stauts": "status", "inbx": "inbox", "docter": "doctor", "trsut": "trust", "frobnicate": "", "x": ""} {
		if got := nearestCommand(commands(), in); got != want {
			t.Errorf("nearestCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
