//go:build !nobackend

package main

// The isolation backends of this platform, preferred first. Each registers itself with
// pkg/sandbox/launch; adding one is its package and a line here. A build with the nobackend
// tag has none, as a platform without a sandbox: its probe reports platform_unsupported.
import _ "anet.dev/anet/pkg/sandbox/seatbelt"
