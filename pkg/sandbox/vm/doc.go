// Package vm is the micro-VM isolation backend (V1, V2): an untrusted run gets its own guest
// kernel, no network device, and one stream link to the run's endpoint on the host.
//
// The guest's kernel and initramfs are package guestimage's; the backend prepares them
// before the first boot. The other parts, each in its own file:
//
//   - qemu: the QEMU command line, a pure function of a Machine, golden-tested.
//   - link: one interface, two transports: vsock (github.com/mdlayher/vsock; on hosts with
//     vhost-vsock) and one virtio-serial port carrying streams multiplexed by
//     github.com/hashicorp/yamux. The host side is a dumb relay per stream to the run's
//     endpoint socket; every rule is enforced by anet-egress on the other side.
//   - guest: the guest's pid 1. It loads the modules, mounts the shares under a private root,
//     brings up lo only, and relays 127.0.0.1:P over the link with pkg/sandbox/runinit's
//     bridge (its upstream opens a link stream), then starts the agent in its own pid, mount
//     and IPC namespaces as an unprivileged uid with no capabilities, no_new_privs and the
//     same two seccomp filters as the bwrap backend, under runinit's init; it reports the
//     agent's status over the link and powers the VM off.
//   - backend: the launch.Backend registered as "vm" (probe, configuration hash, start).
//     pkg/sandbox/launch gates, caches, tracks and watches its runs as it does bwrap's. QEMU
//     runs as the node's user inside the same bwrap+seccomp wall as an agent of the bwrap
//     backend (bwrap.Backend.StartWall), with the named differences of a bwrap.Wall (the guest
//     files, the link socket, /dev/kvm under KVM).
package vm
