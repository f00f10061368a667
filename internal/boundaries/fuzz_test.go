package boundaries

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readsForeignBytes lists the packages whose own code parses or rewrites bytes that someone
// else wrote: a peer, an agent, an upstream, a guest or the operator's file. Each must keep at
// least one native fuzz target (scripts/fuzz.sh runs them all in make test), so that a target
// cannot be dropped without this test saying which package lost it.
var readsForeignBytes = map[string]string{
	"pkg/peer":                  "a peer's frames and signed messages",
	"pkg/canonical":             "the signed encoding every message is checked in",
	"pkg/privsep":               "the helpers' socketpair framing",
	"pkg/sandbox/vm":            "the guest link protocol",
	"pkg/sandbox/vm/guestimage": "the kernel package's bzImage and the initramfs writer's entries",
	"pkg/egress":                "an agent's ClientHello and CONNECT names, the host's resolv.conf",
	"pkg/hostname":              "host names and their punycode",
	"pkg/modelproxy":            "an upstream's answers, the key scrubbed from them",
	"pkg/modelproxy/rules":      "an agent's model requests",
	"pkg/modelproxy/jsontree":   "an agent's request bodies, as JSON",
	"pkg/modelproxy/metering":   "an upstream's answers, read for their usage",
	"pkg/termsafe":              "peer and agent text shown on a terminal",
	"pkg/config":                "the operator's YAML",
	"pkg/sandbox/seatbelt":      "Seatbelt profiles read by the linter, the host's Xcode select link",
	"pkg/peeraddr":              "the peer addresses an operator types",
	"pkg/agents":                "the version an agent's interpreter prints",
	"pkg/receipt":               "anet-egress's receipts and the store's copy of them",
}

var fuzzFunc = regexp.MustCompile(`(?m)^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)`)

// Every package that reads bytes it did not write keeps a fuzz target with an invariant
// (README "Fuzzing").
func TestForeignBytesHaveFuzzTargets(t *testing.T) {
	for dir, what := range readsForeignBytes {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatalf("read %s: %v", dir, err)
		}
		n := 0
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n += len(fuzzFunc.FindAll(b, -1))
		}
		if n == 0 {
			t.Errorf("%s reads %s but has no func FuzzXxx(f *testing.F) in its tests", dir, what)
		}
	}
}
