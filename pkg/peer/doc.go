// Package peer is the node's peer transport: mutually authenticated TLS 1.3 links between
// node keys, signed task / reply / refusal messages, the store-backed inbox intake and the
// outbox delivery loop, and the Engine seam the auto-reply engine plugs into.
//
// # Identity on the wire
//
// A node listens on TCP (config `listen`) with TLS 1.3 only, ALPN "anet/1". Each side
// presents exactly one X.509 certificate, self-signed (PureEd25519) by the node's Ed25519
// key; names and validity dates are not checked. The peer's aid is derived from the
// certificate's public key exactly as pkg/identity does ("an" + lower-case unpadded base32).
// The server requires a client certificate and learns the sender's aid from it; the client
// refuses a server whose aid is not the one it dialled (code peer_wrong_aid). The TLS 1.3
// CertificateVerify proves each side holds its key. There is no CA.
//
// # Frames
//
// After the handshake the client sends frames and the server answers each frame with
// exactly one ack frame, in order. A frame is a 4-byte big-endian length N (1 ≤ N ≤
// 1 MiB = 1048576) followed by N bytes. A client frame holds one signed message; a server
// frame holds one ack. A header announcing more than 1 MiB is answered with a refused ack
// (message_too_large) and the connection is closed. Idle connections close after 2 minutes.
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
//	                 trailing zeros, none when zero, suffix "Z" ("2026-11-29T08:00:00.5Z")
//	  6 interaction  1–64 bytes of [A-Za-z0-9_-], chosen by the task's sender
//	  7 text         UTF-8; task and reply: 1..262144 bytes; refusal: empty
//	  8 code         refusal: [a-z_]{1,64} from pkg/reasons (sandbox_unavailable, budget, …);
//	                 otherwise empty
//	  9 until        refusal with code "budget": when the refusing node's local day ends,
//	                 same time format as sent; otherwise empty
//	 10 reply_port   task: decimal port (1–65535, no leading zeros) the sender listens on
//	                 for answers; otherwise empty
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
// delivering it. Codes peer_rate_limited, peer_replay_window and internal are transient
// (retry later); every other refusal is final.
//
// # Receiver checks, in order
//
//  1. per-peer token bucket (20 at once, 30 a minute), then a node-wide one (2000 at once,
//     1200 a minute): peer_rate_limited
//  2. encoding and field rules: peer_malformed_message; text or frame over its limit:
//     message_too_large
//  3. signature with from's key: peer_bad_signature
//  4. from equals the TLS peer aid: peer_sender_mismatch; to equals this node: peer_wrong_recipient
//  5. sent within [now − 10 min, now + 2 min]: peer_replay_window
//  6. id already received from this peer: duplicate (same content) or peer_message_id_reused
//  7. task: (from, interaction) already used: peer_interaction_reused; reply/refusal: the
//     interaction must be a task this node sent to from (peer_unknown_interaction) with no
//     answer yet (peer_already_answered)
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
// connection that brought the task with the task's reply_port.
package peer
