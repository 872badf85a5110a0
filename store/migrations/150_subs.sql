-- 150: a fanned-out request's sub-requests and a hedged request's copies
-- are each a record (package loadrun, package hedge): sub is the
-- sub-request's index (0 to k-1), copy 0 for the request itself and n for
-- its n-th copy; request names the logical request's first record's seq
-- for every record but that first one. Records stored before are neither.
ALTER TABLE run_records ADD COLUMN sub INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_records ADD COLUMN copy INTEGER NOT NULL DEFAULT 0;
