package seccomp

import "testing"

func filters(t *testing.T) [][]byte {
	t.Helper()
	progs, err := Filters(Options{})
	if err != nil {
		t.Fatalf("Filters: %v", err)
	}
	if len(progs) != 2 {
		t.Fatalf("Filters returned %d programs, want 2 (arch, main)", len(progs))
	}
	return progs
}

func TestFiltersStable(t *testing.T) {
	a := filters(t)
	for i := range a[1] {
		a[1][i] = 0 // a caller scribbling on its copy must not change the next caller's
	}
	b := filters(t)
	c := filters(t)
	for i := range b {
		if string(b[i]) != string(c[i]) {
			t.Fatalf("Filters()[%d] differs between calls", i)
		}
	}
	if string(a[1]) == string(b[1]) {
		t.Fatalf("Filters() returned shared slices")
	}
	for i, p := range b {
		if len(p)%8 != 0 || len(p)/8 > maxInsns {
			t.Errorf("len(Filters()[%d]) = %d bytes, want a multiple of 8, at most %d instructions", i, len(p), maxInsns)
		}
	}
}
