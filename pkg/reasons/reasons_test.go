package reasons

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// builtAtStart is whether the catalog existed before the tests ran: after this package's
// initialisation, which every program of the node pays at start.
var builtAtStart bool

func TestMain(m *testing.M) {
	builtAtStart = catalogMap != nil
	os.Exit(m.Run())
}

// The catalog is built on its first use, not at start: a program that never looks a code up
// (anet-runinit, which every launch waits for) does not pay for it. Its first use builds it
// whole.
func TestCatalogIsBuiltOnFirstUse(t *testing.T) {
	if builtAtStart {
		t.Fatal("the catalog was built while the package initialised; build it on first use (catalog)")
	}
	if e, ok := Lookup(NoBwrap); !ok || e.Requirement != "L1" {
		t.Fatalf("Lookup(%s) = %+v, %v on first use; want its entry", NoBwrap, e, ok)
	}
	if n := len(All()); n < len(core)+len(seatbeltCodes)+len(vmCodes)+len(spendCodes)+len(operatorCodes)+len(wallCodes) {
		t.Fatalf("All() has %d entries, fewer than this package's tables", n)
	}
}

func TestClipKeepsValidUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefghij…"},
		{"ab" + "€€", 4, "ab…"}, // € is 3 bytes: cutting at 4 would split it
		{"€€€", 3, "€…"},
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q (valid UTF-8)", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestCatalogEntriesHaveSentences(t *testing.T) {
	for _, e := range All() {
		if strings.TrimSpace(e.Text) == "" || e.Kind == "" {
			t.Errorf("code %s has no sentence or kind", e.Code)
		}
	}
	if Text("no_such_code") != "no_such_code" {
		t.Errorf("Text of an unknown code = %q, want the code itself", Text("no_such_code"))
	}
	if err := New(Budget, "until 00:00"); !strings.Contains(err.Error(), "budget: ") || !strings.Contains(err.Error(), "until 00:00") {
		t.Errorf("New(budget).Error() = %q", err)
	}
}

// S8: a line that shows a code and its text does not say them again from the detail.
func TestDedup(t *testing.T) {
	full := string(NoBwrap) + ": " + Text(NoBwrap)
	for _, tc := range [][2]string{
		{full + " (exec: \"bwrap\": not found)", "exec: \"bwrap\": not found"},
		{full + ": more", "more"},
		{full, ""},
		{"something else", "something else"},
		{string(NoModel) + ": " + Text(NoModel), string(NoModel) + ": " + Text(NoModel)},
	} {
		if got := Dedup(NoBwrap, tc[0]); got != tc[1] {
			t.Errorf("Dedup(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}
