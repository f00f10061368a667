package limits

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The figures are the requirements' (E3, R1, S6, S7, H2, B2, B6): a change here is a change of
// the node's promise, so it must be made on purpose, here and in docs/requirements.md.
func TestFiguresAreTheRequirements(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"OutputTokens (E3)", OutputTokens, 8192},
		{"ModelRequests (R1)", ModelRequests, 60},
		{"RequestBodyBytes (R1)", RequestBodyBytes, 8 << 20},
		{"RequestBytes (R1)", RequestBytes, 16 << 20},
		{"OpenTunnels (R1)", OpenTunnels, 16},
		{"Tunnels (R1)", Tunnels, 256},
		{"TunnelSentBytes (R1)", TunnelSentBytes, 32 << 20},
		{"TunnelReceivedBytes (R1)", TunnelReceivedBytes, 512 << 20},
		{"EndpointConnections (R1)", EndpointConnections, 32},
		{"MemoryBytes (S6)", MemoryBytes, 2 << 30},
		{"Tasks (S6)", Tasks, 256},
		{"DiskBytes (S6)", DiskBytes, 2 << 30},
		{"WallClock (S6)", int64(WallClock), int64(180 * time.Second)},
		{"ProbeTTL (S7)", int64(ProbeTTL), int64(5 * time.Minute)},
		{"AllowListEntries (H2)", AllowListEntries, 64},
		{"RunsPerDay (B2)", RunsPerDay, 20},
		{"RunsPerPeerPerDay (B2)", RunsPerPeerPerDay, 5},
		{"UntrustedRuns (B6)", UntrustedRuns, 2},
		{"RunsPerPeer (B6)", RunsPerPeer, 1},
		{"ScanInterval (B6)", int64(ScanInterval), int64(5 * time.Second)},
		{"SpendPerDayMicros (K2)", SpendPerDayMicros, 5_000_000},
		{"SpendPerPeerPerDayMicros (K2)", SpendPerPeerPerDayMicros, 1_000_000},
		{"EstimateBytesPerToken (K1)", EstimateBytesPerToken, 3},
		{"StrangerPendingBytes (N1)", StrangerPendingBytes, 1 << 20},
		{"StrangersPendingBytes (N1)", StrangersPendingBytes, 64 << 20},
		{"DiskFreeMinBytes (N1)", DiskFreeMinBytes, 256 << 20},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if got, want := R1Model(), (Model{Requests: 60, BodyBytes: 8 << 20, TotalBytes: 16 << 20}); got != want {
		t.Errorf("R1Model() = %+v, want %+v", got, want)
	}
}

// The repository's requirements state the same figures as the code: each requirement's
// paragraph in docs/requirements.md contains the phrases built from the constants here.
func TestRequirementsDocStatesTheFigures(t *testing.T) {
	doc, err := os.ReadFile("../../docs/requirements.md")
	if err != nil {
		t.Fatal(err)
	}
	words := map[int]string{1: "one", 2: "two", 5: "five"}
	for id, phrases := range map[string][]string{
		"E3": {fmt.Sprintf("capped at %d", OutputTokens), fmt.Sprintf("set to %d", OutputTokens)},
		"R1": {
			fmt.Sprintf("%d model requests", ModelRequests), Bytes(RequestBodyBytes) + " in one request body",
			Bytes(RequestBytes) + " of request data", fmt.Sprintf("%d tunnels open", OpenTunnels),
			fmt.Sprintf("open %d in all", Tunnels), "send " + Bytes(TunnelSentBytes), "receive " + Bytes(TunnelReceivedBytes),
			fmt.Sprintf("%d connections", EndpointConnections),
		},
		"S6": {Bytes(MemoryBytes) + " of memory", fmt.Sprintf("%d tasks", Tasks), fmt.Sprintf("default %d s", int(WallClock.Seconds())), "past " + Bytes(DiskBytes)},
		"S7": {"for " + words[int(ProbeTTL/time.Minute)] + " minutes"},
		"H2": {fmt.Sprintf("at most %d entries", AllowListEntries)},
		"B2": {fmt.Sprintf("default %d, all untrusted peers", RunsPerDay), fmt.Sprintf("(default %d)", RunsPerPeerPerDay)},
		"B6": {"At most " + words[UntrustedRuns] + " untrusted runs", words[RunsPerPeer] + " per peer", fmt.Sprintf("every %d s", int(ScanInterval.Seconds()))},
		"K1": {fmt.Sprintf("bytes / %d", EstimateBytesPerToken)},
		"K2": {"default " + units(SpendPerDayMicros) + ", all untrusted peers", "default " + units(SpendPerPeerPerDayMicros) + ")"},
	} {
		m := regexp.MustCompile(`(?ms)^- \*\*` + id + `\*\* (.*?)(?:\n- |\n\n|\z)`).FindSubmatch(doc)
		if m == nil {
			t.Errorf("docs/requirements.md defines no %s", id)
			continue
		}
		text := strings.Join(strings.Fields(string(m[1])), " ")
		for _, p := range phrases {
			if !strings.Contains(text, p) {
				t.Errorf("docs/requirements.md %s does not say %q: %s", id, p, text)
			}
		}
	}
}

func TestModelCheckAndDefaults(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Model
		want string
	}{
		{"zero is the default", Model{}, ""},
		{"lowered", Model{Requests: 1, BodyBytes: 1, TotalBytes: 1}, ""},
		{"R1 itself", R1Model(), ""},
		{"raised requests", Model{Requests: ModelRequests + 1}, "p.requests = 61: must be between 0 (default) and 60 (R1)"},
		{"raised body", Model{BodyBytes: RequestBodyBytes + 1}, "p.body_bytes = 8388609"},
		{"negative total", Model{TotalBytes: -1}, "p.total_bytes = -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.m.Check("p.")
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Check(%+v) = %v, want %q", c.m, err, c.want)
			}
		})
	}
	if got := (Model{Requests: 3}).WithDefaults(); got != (Model{Requests: 3, BodyBytes: RequestBodyBytes, TotalBytes: RequestBytes}) {
		t.Errorf("WithDefaults() = %+v, want requests 3 and R1's byte figures", got)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		8 << 20: "8 MiB", 512 << 20: "512 MiB", 2 << 30: "2 GiB", 64 << 10: "64 KiB",
		1536: "1536 bytes", 1: "1 byte", 0: "0 bytes", 3 << 30: "3 GiB", 1 << 40: "1024 GiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// units writes micro-units as the configuration does: 5.00.
func units(micros int64) string {
	return fmt.Sprintf("%d.%02d", micros/1_000_000, micros%1_000_000/10_000)
}

// TestSizes: how the operator writes a size (config fields, anet-sandboxd --memory/--disk).
func TestSizes(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"2GiB", 2 << 30}, {"16MiB", 16 << 20}, {"1KiB", 1024}, {"1048576", 1 << 20}, {"0", 0},
		{"0GiB", 0}, {"8589934591GiB", 8589934591 << 30},
	}
	for _, g := range good {
		t.Run(g.in, func(t *testing.T) {
			if got, err := ParseSize(g.in); err != nil || got != g.want {
				t.Fatalf("ParseSize(%q) = %d, %v, want %d", g.in, got, err, g.want)
			}
		})
	}
	for _, in := range []string{"2G", "2GB", "2gib", "1.5GiB", "-1", "-1GiB", "GiB", "", "2 GiB", "8589934592GiB", "99999999999999999999"} {
		t.Run("bad "+in, func(t *testing.T) {
			if got, err := ParseSize(in); err == nil {
				t.Fatalf("ParseSize(%q) = %d, nil, want an error", in, got)
			}
		})
	}
	for _, n := range []int64{0, 1, 1023, 1024, 3 << 20, 2 << 30, 1<<30 + 1} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v, want %d", n, got, err, n)
		}
	}
}
