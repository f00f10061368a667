package attack

// battery is the fixed order of attacks and checks, each with the requirement it proves.
var battery = []entry{
	// Network (S2; the probe's five properties are S7).
	{"loopback", "S2,S7", checkLoopback},
	{"host_tcp", "S2,S7", attackHostTCP},
	{"external_ip", "S2", attackExternalIP},
	{"host_abstract", "S2,S7", attackHostAbstract},
	{"runtime_socket", "S3,F3", attackRuntimeSocket},
	// Files (S3, F3).
	{"ssh_key", "S3", attackSSHKey},
	{"control_token", "F3", attackControlToken},
	{"data_dir", "S3", attackDataDir},
	{"write_etc", "S3", attackWriteEtc},
	// Socket families (S4; AF_VSOCK reaches the hypervisor host).
	{"af_vsock", "S4", attackSocket(afVSOCK, false)},
	{"af_vsock_highbits", "S4", attackSocket(afVSOCK, true)},
	{"af_packet", "S4", attackSocket(afPACKET, false)},
	{"af_alg", "S4", attackSocket(afALG, false)},
	{"af_netlink", "S4", attackSocket(afNETLINK, false)},
	// Tracing (S4).
	{"ptrace_pid1", "S4", childAttack("ptrace_pid1")},
	{"process_vm_readv_pid1", "S4", attackProcessVMReadv},
	{"proc1_environ", "S4", attackProc1Environ},
	// Mounting (S4).
	{"mount", "S4", attackMount},
	{"umount2", "S4", attackUmount2},
	{"pivot_root", "S4", attackPivotRoot},
	{"fsopen", "S4", attackFsopen},
	{"open_tree", "S4", attackOpenTree},
	// User namespaces (S4, S7).
	{"clone3", "S4", attackClone3},
	{"unshare_newuser", "S4,S7", attackUnshareNewuser},
	{"clone_newuser", "S4", attackCloneNewuser},
	// Keyring (S4, S7).
	{"keyctl", "S4,S7", attackKeyctl},
	{"add_key", "S4", attackAddKey},
	// Kernel interfaces (S4).
	{"bpf", "S4", attackBPF},
	{"perf_event_open", "S4", attackPerfEventOpen},
	{"io_uring_setup", "S4", attackIOUringSetup},
	{"init_module", "S4", attackInitModule},
	{"userfaultfd", "S4", attackUserfaultfd},
	// Terminal injection (S4).
	{"tiocsti", "S4", childAttack("tiocsti")},
	{"tiocsti_highbits", "S4", childAttack("tiocsti_highbits")},
	// Foreign ABIs (S4).
	{"x32", "S4", childAttack("x32")},
	{"int80", "S4", childAttack("int80")},
	// Privileges and namespaces (S4, S1).
	{"proc_status", "S4", checkProcStatus},
	{"setuid_su", "S4", attackSetuidSu},
	{"proc_pids", "S1", checkProcPids},
	{"hostname", "S1", checkHostname},
}
