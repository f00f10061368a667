package linksafe

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ValidateRelPath accepts a relative path of plain names (no "", ".", ".." components).
func ValidateRelPath(rel string) error {
	if filepath.IsAbs(rel) || strings.IndexByte(rel, 0) >= 0 {
		return fmt.Errorf("%q: want a relative path", rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%q: component %q not allowed", rel, c)
		}
	}
	return nil
}
