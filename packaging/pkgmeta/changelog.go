package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"time"
)

// Changelog is a one-entry Debian changelog (deb-changelog(5)) for a package built from the
// repository: Debian policy wants one in every package, and dpkg-parsechangelog and lintian
// check its version against the package's.
func Changelog(name, debVersion, maintainer, commit string, when time.Time) string {
	return fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Package of %s built from commit %s.\n\n -- %s  %s\n",
		name, debVersion, name, commit, maintainer, when.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
}

// gzipBest compresses with the maximum level and no name or time in the header, as
// policy asks of changelogs and manual pages, so that one commit gives one package.
func gzipBest(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
