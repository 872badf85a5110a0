-- 050: sweeps run from the web (the runner): one row per run, its rows and
-- every raw request record. Runs are not tied to the learners table: a
-- learner resetting their progress does not erase measurements others may
-- have watched.
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	learner     TEXT NOT NULL,
	lesson      TEXT NOT NULL DEFAULT '',
	block       TEXT NOT NULL DEFAULT '',
	request     TEXT NOT NULL,            -- the run's request as JSON
	status      TEXT NOT NULL,            -- queued, running, done, failed, cancelled, interrupted
	reason      TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	started_at  TEXT NOT NULL DEFAULT '',
	ended_at    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_learner ON runs (learner, created_at);
CREATE INDEX runs_created ON runs (created_at);
CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_block ON runs (block, status, created_at);

-- One row per finished window, as loadrun.Row JSON.
CREATE TABLE run_rows (
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	win     INTEGER NOT NULL,
	row     TEXT NOT NULL,
	PRIMARY KEY (run_id, win)
);

-- Every raw request record. Times are microseconds from the window start;
-- NULL where loadrun leaves the CSV cell empty.
CREATE TABLE run_records (
	run_id        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	win           INTEGER NOT NULL,
	seq           INTEGER NOT NULL,
	intended_us   INTEGER NOT NULL,
	sent_us       INTEGER NOT NULL,
	end_us        INTEGER NOT NULL,
	outcome       INTEGER NOT NULL,       -- loadrun.Outcome
	status        INTEGER NOT NULL,
	reason        TEXT NOT NULL,
	queue_wait_ms REAL NOT NULL,          -- -1 when absent
	service_ms    REAL NOT NULL,          -- -1 when absent
	PRIMARY KEY (run_id, win, seq)
) WITHOUT ROWID;
