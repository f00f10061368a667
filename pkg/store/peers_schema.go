package store

// peerSchema is migration 2: the peer transport's tables. Times are canonical
// RFC 3339 UTC text (formatTime); *_unix columns are unix nanoseconds for ordering.
var peerSchema = []string{
	// Nodes this node may send tasks to, by aid, with the address to dial.
	`CREATE TABLE peers (
		aid      TEXT PRIMARY KEY,
		addr     TEXT NOT NULL,
		added_at TEXT NOT NULL
	)`,
	// Peers whose tasks the policy treats as trusted (auto_reply.trusted).
	`CREATE TABLE trust (
		aid      TEXT PRIMARY KEY,
		added_at TEXT NOT NULL
	)`,
	// One row per task: direction 'in' (a peer asked this node) or 'out' (this node asked).
	// The pair (peer, interaction) is unique per direction: a peer cannot reuse an id.
	`CREATE TABLE interactions (
		id           INTEGER PRIMARY KEY,
		peer         TEXT    NOT NULL,
		interaction  TEXT    NOT NULL,
		direction    TEXT    NOT NULL CHECK (direction IN ('in', 'out')),
		state        TEXT    NOT NULL,
		text         TEXT    NOT NULL,
		task_msg_id  TEXT    NOT NULL,
		sent_at      TEXT    NOT NULL,
		created_at   TEXT    NOT NULL,
		created_unix INTEGER NOT NULL,
		reply_addr   TEXT    NOT NULL DEFAULT '',
		answer_type  TEXT    NOT NULL DEFAULT '',
		answer_text  TEXT    NOT NULL DEFAULT '',
		answer_code  TEXT    NOT NULL DEFAULT '',
		answer_until TEXT    NOT NULL DEFAULT '',
		answered_at  TEXT    NOT NULL DEFAULT '',
		UNIQUE (peer, interaction, direction)
	)`,
	`CREATE INDEX interactions_by_id ON interactions(interaction)`,
	`CREATE INDEX interactions_by_state ON interactions(direction, state, created_unix)`,
	// Every signed message received or delivered, byte for byte (encoding and signature):
	// the proof of who said what. (direction, peer, msg_id) unique is the replay guard.
	`CREATE TABLE messages (
		id           INTEGER PRIMARY KEY,
		direction    TEXT NOT NULL CHECK (direction IN ('in', 'out')),
		peer         TEXT NOT NULL,
		msg_id       TEXT NOT NULL,
		type         TEXT NOT NULL,
		interaction  TEXT NOT NULL,
		content_hash BLOB NOT NULL CHECK (length(content_hash) = 32),
		raw          BLOB NOT NULL,
		at           TEXT NOT NULL,
		UNIQUE (direction, peer, msg_id)
	)`,
	// Messages waiting to be delivered. Each attempt signs the content afresh (new sent
	// time, same msg_id), so a late retry is inside the receiver's window and still
	// de-duplicated there.
	`CREATE TABLE outbox (
		id                INTEGER PRIMARY KEY,
		peer              TEXT    NOT NULL,
		msg_id            TEXT    NOT NULL UNIQUE,
		type              TEXT    NOT NULL,
		interaction       TEXT    NOT NULL,
		text              TEXT    NOT NULL,
		code              TEXT    NOT NULL,
		until             TEXT    NOT NULL,
		state             TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
		attempts          INTEGER NOT NULL DEFAULT 0,
		next_attempt_unix INTEGER NOT NULL,
		last_error        TEXT    NOT NULL DEFAULT '',
		created_at        TEXT    NOT NULL,
		done_at           TEXT    NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX outbox_due ON outbox(state, next_attempt_unix)`,
	`CREATE INDEX outbox_by_interaction ON outbox(peer, interaction)`,
}
