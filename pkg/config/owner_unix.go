//go:build unix

package config

import (
	"fmt"
	"io/fs"
	"syscall"
)

func fileOwner(fi fs.FileInfo) (int, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no owner information for %s", fi.Name())
	}
	return int(st.Uid), nil
}
