package config

import "path/filepath"

// LauncherArgs are anet-sandboxd's flags for this sandbox section (V1): the backend, the
// guest cache of the vm backend, and the TCG allowance, which is never on unless the operator
// set vm_accel to kvm_or_tcg. anetd passes them to serve and `anet doctor` to probe, so both
// check the backend the node uses. The default (bwrap) names no backend: anet-sandboxd then
// uses its platform's first, which is bwrap on Linux and whatever another platform has.
func (s SandboxLimits) LauncherArgs(p Paths) []string {
	var args []string
	if s.Isolation == IsolationVM {
		args = append(args, "--isolation", string(IsolationVM), "--vm-cache", filepath.Join(p.CacheDir, "vm"))
	}
	if s.VMAccel == VMAccelKVMOrTCG {
		args = append(args, "--vm-allow-tcg")
	}
	return args
}
