-- 080: the second step of a class reveal (package classroom). After the
-- spread of a question's votes, the host shows the answer with its
-- explanation; answered_at, on the question's last round, says when ('' =
-- not yet), so a restart keeps every screen on the step it was on.
ALTER TABLE class_rounds ADD COLUMN answered_at TEXT NOT NULL DEFAULT '';
