package seatbelt

import (
	"path/filepath"
	"strings"
)

// The active developer dir is where /usr/bin/git, cc, make, python3 and the other xcrun
// shims find the real tools: what `xcode-select -p` prints. A run's environment holds no
// DEVELOPER_DIR (S5), so the shims in a run follow the select link, and so does this
// lookup: anet-sandboxd's own DEVELOPER_DIR, which `xcode-select -p` would print, is not
// what the run's shims use.
const (
	// SelectLink is the link `xcode-select -s` sets, by its resolved path (/var is a link
	// to /private/var, and Seatbelt matches resolved paths).
	SelectLink = "/private/var/db/xcode_select_link"
	// XcodeDeveloperDir and CommandLineTools are where the shims look, in this order, when
	// no dir was ever selected.
	XcodeDeveloperDir = "/Applications/Xcode.app/Contents/Developer"
	CommandLineTools  = "/Library/Developer/CommandLineTools"
)

// DeveloperDir is the active developer dir as a run's shims will find it, resolved (no link
// on the way: Seatbelt matches the path the kernel resolved): the select link's target,
// else Xcode's dir, else the Command Line Tools'. A candidate that does not resolve, that is
// not shaped like a developer dir (the Command Line Tools', or an app's Contents/Developer:
// so a link set by mistake to a dir of data opens nothing), or that could not be a parameter
// of the profile (checkPath: a broad dir, one around the operator's home) is passed over. With none, it is CommandLineTools, which then opens nothing (the
// dir is not there, and only root can create it), and the shims fail as they do on the host.
// readlink and resolve are os.Readlink and filepath.EvalSymlinks on a Mac.
func DeveloperDir(readlink func(string) (string, error), resolve func(string) (string, error), operatorHome string) string {
	var cands []string
	if t, err := readlink(SelectLink); err == nil && t != "" {
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(SelectLink), t)
		}
		cands = append(cands, t)
	}
	cands = append(cands, XcodeDeveloperDir, CommandLineTools)
	for _, c := range cands {
		r, err := resolve(c)
		if err != nil {
			continue
		}
		if developerShaped(r) && checkPath(ParamDeveloperDir, r, operatorHome) == nil {
			return r
		}
	}
	return CommandLineTools
}

// developerShaped reports whether d can be a developer dir: the Command Line Tools', or the
// Contents/Developer of an app bundle (Xcode.app, Xcode-beta.app, wherever it is kept).
func developerShaped(d string) bool {
	if d == CommandLineTools {
		return true
	}
	app, ok := strings.CutSuffix(d, "/Contents/Developer")
	return ok && strings.HasSuffix(app, ".app") && len(filepath.Base(app)) > len(".app")
}
