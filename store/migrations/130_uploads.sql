-- 130: a learner's own results files, uploaded to the "Your service" page
-- (package web), are stored as runs of theirs marked upload: private to
-- that learner (Runs lists them to no one else), deleted with their
-- progress (Reset) and deletable by them (DeleteUpload).
ALTER TABLE runs ADD COLUMN upload INTEGER NOT NULL DEFAULT 0;
