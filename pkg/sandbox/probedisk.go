package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The probe cache outlives the process on disk (S7): `anet-sandboxd exec` is a new process
// every time, and a probe costs more than the launch it gates. Only passing results are
// written, one file per configuration, and a file is trusted only if nothing but this user
// could have written it: the directory is a real 0700 directory of ours and the file a
// regular 0600 file of ours (not a symlink), its result passes, names the configuration asked
// for, carries the key of the binaries it was taken with, and is younger than the TTL and not
// from the future. Anything else is a miss and the probe runs again. The directory is under
// the node's runtime directory, which no sandbox ever sees (it is hidden in every run).

// maxProbeFile bounds what is read of a cache file; a result is a few KiB.
const maxProbeFile = 1 << 20

// clockSkew is how far in the future a cached result may claim to be from.
const clockSkew = time.Minute

type diskEntry struct {
	Key    string      `json:"key"`
	Result ProbeResult `json:"result"`
}

// diskKey binds a configuration hash to the stamp of the binaries and host it was probed on.
func diskKey(hash, stamp string) string {
	sum := sha256.Sum256([]byte(hash + "\x00" + stamp))
	return hex.EncodeToString(sum[:])
}

func (c *ProbeCache) diskPath(key string) string {
	return filepath.Join(c.Dir, "probe-"+key[:32]+".json")
}

// loadDisk returns the cached passing result for hash, or false.
func (c *ProbeCache) loadDisk(hash string, now time.Time, ttl time.Duration) (ProbeResult, bool) {
	if c.Dir == "" || !privateDir(c.Dir) {
		return ProbeResult{}, false
	}
	key := diskKey(hash, c.Stamp)
	f, err := os.OpenFile(c.diskPath(key), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return ProbeResult{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || !ownedByUs(fi) {
		return ProbeResult{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxProbeFile+1))
	if err != nil || len(data) > maxProbeFile {
		return ProbeResult{}, false
	}
	var e diskEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return ProbeResult{}, false
	}
	r := e.Result
	if e.Key != key || !r.OK || r.Code != "" || r.ConfigHash != hash || r.At.IsZero() ||
		now.Sub(r.At) >= ttl || r.At.After(now.Add(clockSkew)) {
		return ProbeResult{}, false
	}
	return r, true
}

// saveDisk writes a passing result atomically; a failure to write only costs the next
// process a probe.
func (c *ProbeCache) saveDisk(hash string, r ProbeResult) error {
	if c.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("probe cache: %w", err)
	}
	if !privateDir(c.Dir) {
		return fmt.Errorf("probe cache: %s is not a 0700 directory of this user", c.Dir)
	}
	key := diskKey(hash, c.Stamp)
	data, err := json.Marshal(diskEntry{Key: key, Result: r})
	if err != nil {
		return fmt.Errorf("probe cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("probe cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("probe cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.diskPath(key)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("probe cache: %w", err)
	}
	return nil
}

// dropDisk removes what is cached for hash: the configuration just failed its probe.
func (c *ProbeCache) dropDisk(hash string) {
	if c.Dir != "" {
		os.Remove(c.diskPath(diskKey(hash, c.Stamp)))
	}
}

// dropAllDisk removes every result on disk, whatever its configuration.
func (c *ProbeCache) dropAllDisk() {
	if c.Dir == "" || !privateDir(c.Dir) {
		return
	}
	files, _ := filepath.Glob(filepath.Join(c.Dir, "probe-*.json"))
	for _, f := range files {
		os.Remove(f)
	}
}

// privateDir reports whether dir is a directory (not a symlink) of this user that nobody
// else may enter.
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	return err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 == 0 && ownedByUs(fi)
}

func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// FileStamp identifies the file at path as installed (device, inode, size, modification time):
// a replaced binary gets a new stamp, so results probed with the old one are not reused.
func FileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path + ":missing"
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return fmt.Sprintf("%s:%d:%d", path, fi.Size(), fi.ModTime().UnixNano())
	}
	return fmt.Sprintf("%s:%d:%d:%d:%d", path, st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano())
}
