package reasons

// Micro-VM backend codes (V1): sandbox states of the vm backend. The requester sees
// sandbox_unavailable; the operator sees these in status, doctor and the log. They live here,
// not in the backend's package, because anetd reads them and must not link that package.
const (
	VMNoQEMU        Code = "vm_no_qemu"
	VMNoGuestKernel Code = "vm_no_guest_kernel"
	VMNoAccel       Code = "vm_no_accel"
)

// vmCodes are the catalog's entries of the vm backend's codes.
var vmCodes = []Entry{
	{Code: VMNoQEMU, Kind: KindSandbox, Text: "the vm isolation needs QEMU: install the qemu-system-x86 package", Requirement: "V1"},
	{Code: VMNoGuestKernel, Kind: KindSandbox, Text: "the vm isolation needs a guest kernel: in /var/cache/anet, apt-get download the plain linux-image package that linux-image-amd64 depends on (see README)", Requirement: "V1"},
	{Code: VMNoAccel, Kind: KindSandbox, Text: "no usable KVM and software emulation (tcg) is not allowed: set auto_reply.sandbox.vm_accel to kvm_or_tcg to accept slow runs, or use isolation bwrap", Requirement: "V1"},
}
