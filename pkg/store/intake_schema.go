package store

// intakeSchema is migration 3 (N1): what intake limits need to survive a restart.
//
// messages gains the source an inbound message came from (admission's form: "192.0.2.7/32",
// "2001:db8::/64") and its arrival in unix nanoseconds, so the rate buckets can be rebuilt at
// start-up from what was accepted. Rows from before this migration keep ” and 0: they are
// older than any bucket's memory.
//
// intake_usage holds, per peer, the unanswered inbound tasks and the bytes they are charged
// (their text plus TaskOverhead each); the row with peer ” is the total of all peers.
// Triggers keep it exact on every path that adds or answers a task, so no caller can forget
// it. The triggers' 1024 is TaskOverhead; a test checks that they agree.
var intakeSchema = []string{
	`ALTER TABLE messages ADD COLUMN src TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE messages ADD COLUMN at_unix INTEGER NOT NULL DEFAULT 0`,
	`CREATE INDEX messages_by_arrival ON messages(direction, at_unix)`,
	`CREATE TABLE intake_usage (
		peer  TEXT    PRIMARY KEY,
		tasks INTEGER NOT NULL,
		bytes INTEGER NOT NULL
	)`,
	`INSERT INTO intake_usage(peer, tasks, bytes)
		SELECT peer, COUNT(*), SUM(length(CAST(text AS BLOB)) + 1024) FROM interactions
		WHERE direction = 'in' AND state = 'new' GROUP BY peer`,
	`INSERT INTO intake_usage(peer, tasks, bytes)
		SELECT '', COUNT(*), COALESCE(SUM(length(CAST(text AS BLOB)) + 1024), 0) FROM interactions
		WHERE direction = 'in' AND state = 'new'`,
	`CREATE TRIGGER intake_usage_task AFTER INSERT ON interactions
		WHEN NEW.direction = 'in' AND NEW.state = 'new'
		BEGIN
			INSERT OR IGNORE INTO intake_usage(peer, tasks, bytes) VALUES (NEW.peer, 0, 0);
			UPDATE intake_usage SET tasks = tasks + 1, bytes = bytes + length(CAST(NEW.text AS BLOB)) + 1024
				WHERE peer IN (NEW.peer, '');
		END`,
	`CREATE TRIGGER intake_usage_answered AFTER UPDATE OF state ON interactions
		WHEN OLD.direction = 'in' AND OLD.state = 'new' AND NEW.state != 'new'
		BEGIN
			UPDATE intake_usage SET tasks = tasks - 1, bytes = bytes - length(CAST(OLD.text AS BLOB)) - 1024
				WHERE peer IN (OLD.peer, '');
			DELETE FROM intake_usage WHERE peer = OLD.peer AND peer != '' AND tasks <= 0;
		END`,
	`CREATE TRIGGER intake_usage_deleted AFTER DELETE ON interactions
		WHEN OLD.direction = 'in' AND OLD.state = 'new'
		BEGIN
			UPDATE intake_usage SET tasks = tasks - 1, bytes = bytes - length(CAST(OLD.text AS BLOB)) - 1024
				WHERE peer IN (OLD.peer, '');
			DELETE FROM intake_usage WHERE peer = OLD.peer AND peer != '' AND tasks <= 0;
		END`,
}
