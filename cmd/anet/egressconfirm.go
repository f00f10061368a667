package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"anet.dev/anet/pkg/config"
)

// confirmEgress applies H1 on every path that sets auto_reply.egress_allow (`anet autoreply
// set --egress-allow` and `anet config set auto_reply.egress_allow`): a value that adds a host
// needs a yes at a terminal; one that only removes hosts does not. Each entry is checked by
// the one allow-list rule (H2, H3) before anyone is asked. cfg is the configuration before
// the change.
func confirmEgress(cfg config.Config, value string, in io.Reader, out io.Writer, terminal, yes bool) error {
	var next []string
	if strings.TrimSpace(value) != "" {
		for _, h := range strings.Split(value, ",") {
			next = append(next, strings.TrimSpace(h))
		}
	}
	if err := config.ValidateEgressAllow(next, cfg.AutoReply.APIBase); err != nil {
		return err
	}
	have := map[string]bool{}
	for _, h := range cfg.AutoReply.EgressAllow {
		have[h] = true
	}
	var added []string
	for _, h := range next {
		if !have[h] {
			added = append(added, h)
		}
	}
	if len(added) == 0 {
		return nil
	}
	if !terminal {
		return fmt.Errorf("adding allowed hosts (%s) needs confirmation at a terminal (H1); run this command in a terminal — removing hosts needs none", strings.Join(added, ", "))
	}
	if yes {
		return nil
	}
	fmt.Fprintf(out, "Sandboxed runs of untrusted peers will be able to send data to: %s\n", strings.Join(added, ", "))
	fmt.Fprintf(out, "Domain fronting inside TLS is not detected (H8): allow only hosts you would let a person send data to.\nType yes to allow: ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return fmt.Errorf("not confirmed; allowed hosts unchanged")
	}
	return nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
