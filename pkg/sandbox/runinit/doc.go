// Package runinit is what runs inside a sandbox on the agent's side: pid 1 of a run (Init:
// start the agent, forward signals, reap orphans, report the agent's status) and the bridge
// that relays 127.0.0.1:P to the run's endpoint (Relay). It holds nothing the agent lacks and
// enforces nothing (docs/architecture.md rule 3): every rule is applied by the endpoint on the other
// side. The stream to the endpoint is an Upstream, so a micro-VM guest's init can reuse the
// bridge over vsock or virtio-serial where bwrap's uses the bound unix socket.
package runinit
