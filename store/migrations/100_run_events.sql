-- 100: every event of a run's log as it was logged and sent (package
-- runner), with its sequence number, so a stream resumed after a restart
-- or once the runner has let the run go numbers each event as it was
-- numbered live.
CREATE TABLE run_events (
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	kind    TEXT NOT NULL,
	event   TEXT NOT NULL,                -- the event's JSON, as sent
	PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
