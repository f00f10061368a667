// Package guestimage prepares what the vm backend boots (V1): the guest's kernel and its
// initramfs, both cached in the node's cache dir and reused while their sources are unchanged.
//
//   - kernel: a guest kernel from a Debian linux-image package, extracted at first use with
//     dpkg-deb (the PVH vmlinux taken out of the bzImage, which QEMU's microvm machine boots
//     directly, and the few modules the guest needs, each after the modules its .modinfo
//     names), with its version recorded in a manifest.
//   - initramfs: a newc cpio archive the node writes itself (newc.go, checked byte for byte
//     against u-root's pkg/cpio) holding the guest init (anet-sandboxd itself, with its ELF
//     interpreter and libraries when it is dynamically linked), the modules in load order and
//     /dev/console; the paths the guest init reads there are this package's constants.
//
// What the guest and the host say to each other (GuestConfig, the link) is package vm's.
package guestimage
