package vm

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"

	"anet.dev/anet/pkg/reasons"
	"anet.dev/anet/pkg/sandbox"
)

// The control stream carries JSON lines. The guest speaks first (Hello), the host answers with
// the run's GuestConfig, the guest reports Started when the agent runs and Exit when it is
// gone; the host may send Stop (TERM the agent) at any time after the config.

// GuestShare is one 9p share as the guest mounts it.
type GuestShare struct {
	Tag      string `json:"tag"`
	Mount    string `json:"mount"` // path in the agent's root
	ReadOnly bool   `json:"ro"`
}

// GuestLinkDir is a symlink of the agent's root (usrmerge: /bin -> usr/bin).
type GuestLinkDir struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// GuestConfig is the run as the guest init needs it. It holds what the bwrap tier's init
// gets on its command line and in its env file, plus the wall the guest builds itself.
type GuestConfig struct {
	Argv      []string           `json:"argv"`
	Env       []string           `json:"env,omitempty"` // handed-in variables (ValidateEnv'd)
	HomeFiles []sandbox.HomeFile `json:"home_files,omitempty"`
	// Port is the loopback port relayed to the endpoint; 0: no relay.
	Port int `json:"port,omitempty"`
	// UID and GID run the agent: the node's own (QEMU's 9p server acts with them on the host).
	UID      int            `json:"uid"`
	GID      int            `json:"gid"`
	Hostname string         `json:"hostname"`
	Shares   []GuestShare   `json:"shares"`
	Links    []GuestLinkDir `json:"links,omitempty"`
	// Tasks and Memory bound the agent's cgroup in the guest; FileSize is its RLIMIT_FSIZE.
	Tasks    int64 `json:"tasks"`
	Memory   int64 `json:"memory"`
	FileSize int64 `json:"file_size"`
	// TmpBytes bounds the home and tmp tmpfs each (they count against the guest's RAM).
	TmpBytes int64 `json:"tmp_bytes"`
	Stdin    bool  `json:"stdin,omitempty"`
}

// Validate checks the config as the guest receives it: the guest init trusts nothing it is
// sent beyond what the bwrap tier's init trusts from its command line.
func (c GuestConfig) Validate() error {
	var errs []error
	if len(c.Argv) == 0 || c.Argv[0] == "" || c.Argv[0][0] != '/' {
		errs = append(errs, errors.New("argv: want an absolute program path first"))
	}
	if c.UID <= 0 || c.GID <= 0 {
		errs = append(errs, fmt.Errorf("uid %d gid %d: the agent never runs as root", c.UID, c.GID))
	}
	if err := sandbox.ValidateEnv(c.Env, c.Port); err != nil {
		errs = append(errs, err)
	}
	if c.Tasks < 2 || c.Memory < 1<<20 || c.FileSize < 1<<12 || c.TmpBytes < 1<<20 {
		errs = append(errs, fmt.Errorf("limits tasks=%d memory=%d file_size=%d tmp=%d: too small", c.Tasks, c.Memory, c.FileSize, c.TmpBytes))
	}
	for _, s := range c.Shares {
		if !validTag(s.Tag) || !cleanAbsPath(s.Mount) || s.Mount == "/" {
			errs = append(errs, fmt.Errorf("share %q at %q: bad tag or mount point", s.Tag, s.Mount))
		}
	}
	for _, l := range c.Links {
		if !cleanAbsPath(l.Path) {
			errs = append(errs, fmt.Errorf("link %q: want a clean absolute path", l.Path))
		}
	}
	return errors.Join(errs...)
}

// Hello is the guest's first message: how long it took to get here.
type Hello struct {
	// KernelMS is the guest's uptime when init started (the kernel's boot).
	KernelMS int64 `json:"kernel_ms"`
	// ModulesMS is init's module loading; LinkMS its wait for the link.
	ModulesMS int64 `json:"modules_ms"`
	LinkMS    int64 `json:"link_ms"`
}

// Event is a guest message after Hello.
type Event struct {
	// Event is "started", "exit" or "error".
	Event string `json:"event"`
	// SharesMS is the time to mount the shares; SetupMS all set-up after the config.
	SharesMS int64 `json:"shares_ms,omitempty"`
	SetupMS  int64 `json:"setup_ms,omitempty"`
	ExitCode int   `json:"exit_code,omitempty"`
	Signal   int   `json:"signal,omitempty"`
	// Limit is a limit the agent's cgroup in the guest reports it ran into.
	Limit  reasons.Code `json:"limit,omitempty"`
	Detail string       `json:"detail,omitempty"`
}

// HostOp is a host message after the config.
type HostOp struct {
	Op string `json:"op"` // "stop"
}

// maxControlLine bounds one control message (the config holds at most 32 KiB of home files).
const maxControlLine = 256 << 10

// control wraps the control stream: JSON lines both ways, writes serialised.
type control struct {
	c  net.Conn
	r  *bufio.Reader
	mu sync.Mutex
}

func newControl(c net.Conn) *control {
	return &control{c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

func (c *control) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err = c.c.Write(append(b, '\n'))
	return err
}

func (c *control) recv(v any) error {
	var line []byte
	for {
		part, isPrefix, err := c.r.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		line = append(line, part...)
		if len(line) > maxControlLine {
			return fmt.Errorf("control message longer than %d bytes", maxControlLine)
		}
		if !isPrefix {
			break
		}
	}
	return json.Unmarshal(line, v)
}

func cleanAbsPath(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}
