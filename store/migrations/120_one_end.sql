-- 120: a run's log has exactly one terminal event (done, failed, cancelled
-- or interrupted), whoever writes it: the runner that held the run, a
-- reaper that declared its runner lost, a cancel. Logs written before the
-- runner's writes were fenced by its claim may hold a second one after
-- the first (a runner that went on after it was reaped): the first is the
-- run's end, and the later ones go.
DELETE FROM run_events WHERE kind IN ('done', 'failed', 'cancelled', 'interrupted')
	AND seq > (SELECT MIN(e.seq) FROM run_events e WHERE e.run_id = run_events.run_id AND e.kind IN ('done', 'failed', 'cancelled', 'interrupted'));
CREATE UNIQUE INDEX run_events_one_end ON run_events (run_id) WHERE kind IN ('done', 'failed', 'cancelled', 'interrupted');
