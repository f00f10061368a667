// Package peer is the node's peer transport: mutually authenticated TLS 1.3 links between
// node keys, signed task / reply / refusal messages, the store-backed inbox intake and the
// outbox delivery loop, and the Engine seam the auto-reply engine plugs into.
//
// # Identity on the wire
//
// A node listens on TCP (config `listen`) with TLS 1.3 only. The client must offer ALPN
// "anet/1": a client that offers no ALPN, or only other protocols, gets the fatal alert
// no_application_protocol (120). Each side presents exactly one X.509 certificate, signed
// (PureEd25519) by the node's own Ed25519 key; names and validity dates are not checked. The
// peer's aid is derived from the certificate's public key exactly as pkg/identity does ("an"
// + lower-case unpadded base32). The server requires a client certificate and learns the
// sender's aid from it; the client refuses a server whose aid is not the one it dialled
// (code peer_wrong_aid). The TLS 1.3 CertificateVerify proves each side holds its key. There
// is no CA.
//
// The certificate is self-signed but not a CA certificate: its basic constraints say CA
// false. Checks that treat it as an issuer therefore refuse it (Go's
// x509.Certificate.CheckSignatureFrom, OpenSSL's verification of a self-signed root), and a
// generic TLS library's chain verification must be replaced, not relaxed and left at that.
// Verify a peer's certificate this way instead: exactly one certificate; its public key is
// Ed25519; its signatureAlgorithm is Ed25519; Ed25519-verify the signatureValue over the DER
// tbsCertificate with the public key the certificate itself carries; derive the aid from that
// key and compare it with the aid you expect (client) or record it as the sender (server).
//
// # Admission and limits
//
// Keys cost nothing, so the listener bounds what a party without the operator's trust can
// take, in layers, and keeps room that such a party cannot take for the peers the operator
// chose (N1). Before the handshake a connection is known only by its source: an IPv4
// address, or the /64 of an IPv6 address. A source is vouched when it is the IP address of an
// entry in the peers table, or when a key from the peers table or the trust list completed a
// handshake from it in the last 24 hours. After the handshake the key's class is trusted
// (trust list), known (peers table) or stranger (neither).
//
//	Before TLS (the connection is reset, no TLS byte is read or sent):
//	  new connections per source          20 at once, 10 a second after that
//	  new connections from all sources
//	    that are not vouched, together    400 at once, 200 a second after that
//	  handshakes in progress per source   8
//	  handshakes in progress, shared      256; a new connection when all are taken ends
//	                                      one of them: first one that has sent nothing,
//	                                      then one from the source with the most, then the
//	                                      oldest
//	  handshakes in progress, vouched     64 more, only for vouched sources
//	  time to complete the handshake      10 s; 2 s while its pool is more than half full
//	                                      (the connection is closed when it runs out)
//	After TLS (the connection is closed without an ack; retry later):
//	  connections per key                 4; a new one replaces the key's oldest idle one
//	  connections of strangers            128, at most 8 per source
//	  connections of known and trusted    128, a pool strangers never use
//	                                      When a pool or cap is full, a new connection
//	                                      replaces an idle one in it: a stranger's before a
//	                                      known peer's before a trusted one's, then one of
//	                                      the source (or key) holding the most, then the
//	                                      least recently active; when none is idle, the new
//	                                      connection is refused.
//	  idle between frames                 2 min; a stranger's idle connection is closed
//	                                      after 10 s while strangers hold more than three
//	                                      quarters of their pool
//	  a frame's body, once its header came  30 s; writing an ack 30 s
//
// Connections and messages turned away are counted and written to the log as one summary
// line every 10 seconds (with the sources that were turned away most), plus at most 20
// individual lines per interval.
//
// Messages are rate-limited per class (refusal peer_rate_limited, before the frame is parsed
// or its signature checked):
//
//	trusted key          200 at once, 600 a minute, per key
//	known key             50 at once, 120 a minute, per key
//	stranger key          20 at once,  30 a minute, per key, and also
//	  per source         200 at once, 300 a minute for all stranger keys from one source
//	  all strangers     2000 at once, 1200 a minute together
//
// A stranger's message must find room in all three of its buckets. The buckets are rebuilt
// from the store when the node starts (each accepted message took its tokens when it
// arrived), so a restart gives no one a fresh burst.
//
// Storage (configuration section `intake`): a task is charged its text's bytes plus 1024
// while it is unanswered (answering or refusing it gives the charge back). A stranger's task
// that would take its key past intake.stranger_pending_max (default 1 MiB) is refused with
// peer_quota_exceeded, one that would take all strangers past intake.strangers_pending_max
// (default 64 MiB) with strangers_quota_exceeded. When the free space where the node keeps
// its store is below intake.disk_free_min (default 256 MiB), strangers' messages are refused
// with disk_low; known peers' below half of it, trusted peers' below a quarter (the rest is
// kept for the evidence chain).
//
// # Signed message (anet-msg-v1)
//
// The frame payload is ENC || SIG, where SIG is the last 64 bytes: the Ed25519 signature
// (pure, no pre-hash) by the sender's key over ENC, the whole canonical encoding:
//
//	"anet-msg-v1"              11 ASCII bytes, no length prefix
//	then 10 fields, in order, each a 4-byte big-endian length and that many bytes:
//	  1 type         "task" | "reply" | "refusal"
//	  2 id           message id, 1–64 bytes of [A-Za-z0-9_-], unique per sender
//	  3 from         sender aid (54 bytes)
//	  4 to           recipient aid (54 bytes)
//	  5 sent         time this copy was signed: UTC, Go time.RFC3339Nano, fraction without
//	                 trailing zeros, none when zero, suffix "Z" ("2026-11-29T08:00:00.5Z");
//	                 the year is 0000–9999 (four digits), and a sender refuses to sign others
//	  6 interaction  1–64 bytes of [A-Za-z0-9_-], chosen by the task's sender
//	  7 text         UTF-8; task and reply: 1..262144 bytes; refusal: empty
//	  8 code         refusal: [a-z_]{1,64} from pkg/reasons (sandbox_unavailable, budget, …);
//	                 otherwise empty
//	  9 until        refusal with code "budget": when the refusing node's local day ends,
//	                 same time format as sent; otherwise empty
//	 10 reply_port   task, optional: decimal port (1–65535, no leading zeros) the sender
//	                 listens on for answers, or empty when it does not listen; refusal and
//	                 reply: empty
//
// Every byte of ENC must be consumed by the 10 fields. A time that does not re-format to
// the same text is malformed.
//
// # Ack (anet-ack-v1)
//
//	"anet-ack-v1" then 4 length-prefixed fields:
//	  1 status  "accepted" | "duplicate" | "refused"
//	  2 id      the message id answered ("" when the frame was refused before parsing)
//	  3 code    reason code ("" when accepted; peer_duplicate_message for duplicate)
//	  4 detail  UTF-8 text for people, at most 1024 bytes
//
// "accepted" and "duplicate" both mean the receiver holds the message; the sender stops
// delivering it. Codes peer_rate_limited, peer_replay_window, peer_quota_exceeded,
// strangers_quota_exceeded, disk_low and internal are transient (retry later, with back-off);
// every other refusal is final.
//
// Acks are not signed. Only the TLS connection vouches for them: the server proved its key
// in the handshake, so an ack read on that connection comes from the node dialled, but an
// ack proves nothing to anyone else. The receiver's own record of what it accepted is its
// evidence chain.
//
// # Receiver checks, in order
//
//  1. the sender's rate buckets (see Admission and limits): peer_rate_limited
//  2. encoding and field rules: peer_malformed_message; text or frame over its limit:
//     message_too_large
//  3. signature with from's key: peer_bad_signature
//  4. from equals the TLS peer aid: peer_sender_mismatch; to equals this node: peer_wrong_recipient
//  5. sent within [now − 10 min, now + 2 min]: peer_replay_window
//  6. free space above the sender's class's floor: disk_low
//  7. id already received from this peer: duplicate (same content) or peer_message_id_reused
//  8. task: (from, interaction) already used: peer_interaction_reused; then, from a
//     stranger, the storage quotas: peer_quota_exceeded, strangers_quota_exceeded.
//     reply/refusal: the interaction must be a task this node sent to from
//     (peer_unknown_interaction) with no answer yet (peer_already_answered)
//
// An accepted message is stored byte for byte with its signature and recorded in the
// evidence chain (task_received, reply_received, refusal_received) in one transaction.
//
// # Delivery
//
// Outgoing messages wait in the store's outbox. Each attempt signs the message afresh
// (same id, new sent time), so a retry after a long outage is inside the window and the
// receiver still de-duplicates it by id. Retries back off from 1 s doubling to 5 minutes.
// Answers go to the peers-table address of the requester, or else to the source IP of the
// connection that brought the task with the task's reply_port. A task with an empty
// reply_port from a peer that is not in the peers table is accepted, but its answer waits
// in the outbox until the operator adds the peer's address.
package peer
