-- 110: what the distributed sweep queue needs (--role web and runner, on
-- Postgres; package fleet): a run's client address (for the per-address
-- share across replicas), the runner process that holds it while it runs,
-- and its River job; and the runners, each with its heartbeat, so runs of a
-- runner that stopped beating end "runner lost". SQLite has the same
-- columns (the in-process queue leaves them empty).
ALTER TABLE runs ADD COLUMN addr TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN runner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN job_id INTEGER NOT NULL DEFAULT 0;
CREATE TABLE runners (
	id        TEXT PRIMARY KEY,
	host      TEXT NOT NULL,
	slots     INTEGER NOT NULL,
	started   TEXT NOT NULL,
	heartbeat TEXT NOT NULL
);
