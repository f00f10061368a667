package seatbelt

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// macOS has no cgroup: a run's processes are found by walking the process table from the
// run's first process (the limits wrapper), by parent and by process group. Every process
// seen is remembered with its start time, so the kill at the end reaches one that left the
// group and lost its parent since, and never a process that reused a pid. A process that
// forks, detaches and loses its parent all between two looks (a second apart) is not seen:
// its RLIMIT_CPU still bounds it. The wrapper starts the run in a session of its own, so a
// process of the run cannot join the group of another run, anetd's or the operator's, and a
// group only ever pulls in processes that started after the run did.

type procKey struct {
	pid   int32
	start int64 // microseconds since the epoch
}

type tracker struct {
	root  int
	since int64 // when the run started, in microseconds

	mu   sync.Mutex // guards seen and live
	seen map[int32]procKey
	live map[int32]procKey // as of the last scan
}

func newTracker(root int) *tracker {
	return &tracker{root: root, since: time.Now().Add(-time.Second).UnixMicro(), seen: map[int32]procKey{}}
}

func startOf(p *unix.KinfoProc) int64 {
	return int64(p.Proc.P_starttime.Sec)*1e6 + int64(p.Proc.P_starttime.Usec)
}

// userProcesses counts the processes of this user, for RLIMIT_NPROC.
func userProcesses() (int, error) {
	ps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	return len(ps), nil
}

// scan records the run's processes now and returns how many are alive.
func (t *tracker) scan() (int, error) {
	ps, err := unix.SysctlKinfoProcSlice("kern.proc.uid", os.Getuid())
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	children := map[int32][]int{}
	byPid := map[int32]int{}
	for i := range ps {
		byPid[ps[i].Proc.P_pid] = i
		children[ps[i].Eproc.Ppid] = append(children[ps[i].Eproc.Ppid], i)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	groups := map[int32]bool{}
	live := map[int32]procKey{}
	queue := []int32{int32(t.root)}
	for k := range t.seen {
		queue = append(queue, k) // what was seen before, wherever its parent went
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		i, ok := byPid[pid]
		if _, done := live[pid]; !ok || done {
			continue
		}
		key := procKey{pid, startOf(&ps[i])}
		if old, seen := t.seen[pid]; seen && old != key {
			continue // the pid was reused by another program
		}
		live[pid] = key
		t.seen[pid] = key
		groups[ps[i].Eproc.Pgid] = true
		for _, c := range children[pid] {
			queue = append(queue, ps[c].Proc.P_pid)
		}
	}
	for i := range ps {
		pid := ps[i].Proc.P_pid
		if _, done := live[pid]; !done && groups[ps[i].Eproc.Pgid] && startOf(&ps[i]) >= t.since && int(pid) != os.Getpid() {
			key := procKey{pid, startOf(&ps[i])}
			live[pid], t.seen[pid] = key, key
		}
	}
	t.live = live
	return len(live), nil
}

// killAll kills every process of the run alive now: the last scan's, each still the same
// process (its start time) when the signal goes.
func (t *tracker) killAll() {
	_, _ = t.scan()
	t.mu.Lock()
	defer t.mu.Unlock()
	for pid := range t.live {
		if int(pid) != os.Getpid() {
			_ = syscall.Kill(int(pid), syscall.SIGKILL)
		}
	}
}
