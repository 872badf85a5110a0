-- 072: when a learner chose to open the recorded results that settle a
-- prediction, after locking it in or skipping it ('' = not yet). Seeing a
-- measurement (this, or a run of their own) is what lets them reveal the
-- answer.
ALTER TABLE predictions ADD COLUMN opened_at TEXT NOT NULL DEFAULT '';
