package sandbox

import (
	"fmt"
	"time"

	"anet.dev/anet/pkg/limits"
	"anet.dev/anet/pkg/reasons"
)

// Defaults (S6). Tests and operators may lower them; zero in a Limits field means "default".
const (
	DefaultMemory    int64 = limits.MemoryBytes
	DefaultTasks     int64 = limits.Tasks
	DefaultDisk      int64 = limits.DiskBytes
	DefaultWallClock       = limits.WallClock
	DefaultGrace           = 5 * time.Second
)

// Limits bound one run. Zero fields take the defaults above (see WithDefaults).
type Limits struct {
	// Memory is the cgroup memory limit in bytes.
	Memory int64 `json:"memory,omitempty"`
	// Tasks is the cgroup pids limit.
	Tasks int64 `json:"tasks,omitempty"`
	// Disk bounds home + tmp + work together, in allocated bytes.
	Disk int64 `json:"disk,omitempty"`
	// WallClock is api_timeout_seconds: TERM after it, KILL Grace later.
	WallClock time.Duration `json:"wall_clock,omitempty"`
	Grace     time.Duration `json:"grace,omitempty"`
	// FileSize is RLIMIT_FSIZE: a single file's bound while the disk poller catches up.
	// Zero means the disk limit.
	FileSize int64 `json:"file_size,omitempty"`
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Tasks == 0 {
		l.Tasks = DefaultTasks
	}
	if l.Disk == 0 {
		l.Disk = DefaultDisk
	}
	if l.WallClock == 0 {
		l.WallClock = DefaultWallClock
	}
	if l.Grace == 0 {
		l.Grace = DefaultGrace
	}
	if l.FileSize == 0 {
		l.FileSize = l.Disk
	}
	return l
}

// Validate checks l after defaults are applied.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	for _, c := range []struct {
		name string
		v    int64
		min  int64
	}{
		{"limits.memory", l.Memory, 1 << 20},
		{"limits.tasks", l.Tasks, 2}, // init + the agent
		{"limits.disk", l.Disk, 1 << 16},
		{"limits.file_size", l.FileSize, 1 << 12},
		{"limits.wall_clock", int64(l.WallClock), int64(time.Second)},
		{"limits.grace", int64(l.Grace), int64(10 * time.Millisecond)},
	} {
		if c.v < c.min {
			return fmt.Errorf("%s = %d: must be at least %d", c.name, c.v, c.min)
		}
	}
	return nil
}

// Limit codes say which limit ended a run (or, for cgroup limits, which one it ran into).
const (
	LimitWallClock reasons.Code = "wall_clock"
	LimitDisk      reasons.Code = "disk_limit"
	LimitMemory    reasons.Code = "memory_limit"
	LimitTasks     reasons.Code = "tasks_limit"
)

func init() {
	reasons.Register(
		reasons.Entry{Code: LimitWallClock, Kind: reasons.KindNode, Text: "the run reached its wall-clock limit (api_timeout_seconds) and was stopped", Requirement: "S6"},
		reasons.Entry{Code: LimitDisk, Kind: reasons.KindNode, Text: "the run's home, tmp and work dirs grew past the disk limit and the run was stopped", Requirement: "S6"},
		reasons.Entry{Code: LimitMemory, Kind: reasons.KindNode, Text: "the run reached its memory limit; the kernel killed a process of it", Requirement: "S6"},
		reasons.Entry{Code: LimitTasks, Kind: reasons.KindNode, Text: "the run reached its task limit; further forks failed", Requirement: "S6"},
	)
}

// CgroupLimits is how memory and task limits are enforced for a run.
type CgroupLimits string

const (
	// CgroupFull: limits written and read back from the run's own cgroup (S6 "full").
	CgroupFull CgroupLimits = "full"
	// CgroupNone: no limits (warning no_cgroup_limits).
	CgroupNone CgroupLimits = "none"
)
