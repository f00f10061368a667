package config

import "path/filepath"

// LauncherArgs are anet-sandboxd's flags for this sandbox section (V1): the tier, the guest
// cache of the vm tier, and the TCG allowance, which is never on unless the operator set
// vm_accel to kvm_or_tcg. anetd passes them to serve and `anet doctor` to probe, so both
// check the tier the node uses.
func (s SandboxLimits) LauncherArgs(p Paths) []string {
	args := []string{"--isolation", string(s.Isolation)}
	if s.Isolation == IsolationVM {
		args = append(args, "--vm-cache", filepath.Join(p.CacheDir, "vm"))
	}
	if s.VMAccel == VMAccelKVMOrTCG {
		args = append(args, "--vm-allow-tcg")
	}
	return args
}
