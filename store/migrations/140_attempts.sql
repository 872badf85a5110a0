-- 140: a retrying client's attempts (package retry) are each a record:
-- request is the logical request's first attempt's seq, attempt 0 for the
-- first and n for the n-th retry; class the request's criticality
-- (result.Class: 0 default, 1 critical, 2 sheddable). Records stored
-- before are their own requests, first attempts, of class default.
ALTER TABLE run_records ADD COLUMN request INTEGER NOT NULL DEFAULT -1;
ALTER TABLE run_records ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_records ADD COLUMN class INTEGER NOT NULL DEFAULT 0;
UPDATE run_records SET request = seq;
