//go:build linux && anettest

package seccomp

// FiltersWeakened builds the filters without the named rules: syscall names of the main
// filter ("socket", "keyctl", "clone", …) or RuleArch for the whole arch filter (then only
// the main filter is returned). It exists only in builds with the anettest tag, so the
// launcher's negative self-test can prove the attack battery notices a missing rule; a
// release binary cannot be weakened. Unknown names are an error.
func FiltersWeakened(omit []string) ([][]byte, error) {
	return build(omit)
}
