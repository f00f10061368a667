//go:build !nobackend

package main

// The isolation backends of this platform, preferred first. Each registers itself with
// pkg/sandbox/launch; adding one is its package and a line here. A build with the nobackend
// tag has none, as a platform without a sandbox: its probe reports platform_unsupported.
// The vm backend (V1) is used only when named (--isolation vm, from the config's
// auto_reply.sandbox.isolation); it runs QEMU in bwrap's wall, so it registers after bwrap.
import (
	_ "anet.dev/anet/pkg/sandbox/bwrap"
	_ "anet.dev/anet/pkg/sandbox/vm"
)
