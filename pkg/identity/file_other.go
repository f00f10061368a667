//go:build !unix

package identity

import "fmt"

// readKeyFile is unsupported here: the ownership and mode checks need a unix stat. The node
// runs on Linux and macOS (on Windows, inside WSL2).
func readKeyFile(path string) ([]byte, error) {
	return nil, fmt.Errorf("load identity %s: key files are supported only on unix systems", path)
}
