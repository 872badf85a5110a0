-- 110: the distributed sweep queue (see migrations/110_queue.sql). The
-- runners' times are the database's clock (now()), so runners on machines
-- whose clocks disagree are judged by one clock.
ALTER TABLE runs ADD COLUMN addr TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN runner TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN job_id BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_runner ON runs (runner) WHERE status = 'running';
CREATE TABLE runners (
	id        TEXT COLLATE "C" PRIMARY KEY,
	host      TEXT COLLATE "C" NOT NULL,
	slots     INTEGER NOT NULL,
	started   TIMESTAMPTZ NOT NULL DEFAULT now(),
	heartbeat TIMESTAMPTZ NOT NULL DEFAULT now()
);
