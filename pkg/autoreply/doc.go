// Package autoreply is the auto-reply engine: for each new inbox task it decides by the
// operator's policy whether and how to answer (P1–P4), keeps the daily run budget for
// untrusted peers (B1–B5, B7) and the run slots (B6), and runs the turn through a back-end:
// exec (an agent started by anet-sandboxd, sandboxed or direct, talking to the model only
// through the run's anet-egress endpoint) or openai (one chat completion made by anet-egress;
// no program starts).
//
// The engine holds no key and starts no process: it asks anet-sandboxd to run and
// anet-egress to open endpoints and complete, through the small interfaces in engine.go that
// pkg/node implements over the helpers' sockets.
//
// Decisions made here (documented for operators and requesters):
//   - Requesters only ever see sandbox_unavailable, budget or turn_failed. A sandboxed turn that
//     cannot run (probe failed, helper down, endpoint cannot open, cursor in the sandbox) is
//     refused with sandbox_unavailable (F1); the operator sees the precise code
//     (agent_unsupported, no_bwrap, no_api_key, …) in `anet status` and in the turn's
//     evidence entry (and so in `anet show`). A sandboxed turn whose agent is not installed
//     (agent_missing) is refused the same way and not counted: the requester may send it
//     again once the operator has installed it. A trusted peer's direct turn without its agent
//     leaves the task in the inbox for the operator to answer by hand.
//   - An agent that ran but gave no usable answer (non-zero exit, limit, empty output) is
//     refused with turn_failed: the sandbox passes the reply through unread (F3), but a
//     requester must learn that no answer is coming. Such a sandboxed turn still counts (B1:
//     the run happened and cost money); a turn cut by a crash has no completion and does not
//     (B7).
//   - runs_per_day or runs_per_peer_per_day 0 holds untrusted tasks in the inbox with no
//     refusal (B3). A task whose peer or day is full only because of runs still in flight
//     waits like a task without a slot: those runs may yet end uncounted.
//   - Slots (B6) apply to every untrusted turn, openai answers included.
package autoreply
