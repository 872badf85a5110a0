-- 070: the records learners write in record blocks (lesson 7): the five
-- fields as a JSON object and the saved run they attached ('' = none). One
-- row per learner and block; saving again replaces the fields and keeps
-- the creation time.
CREATE TABLE records (
	learner     TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
	lesson      TEXT NOT NULL,
	block       TEXT NOT NULL,
	fields_json TEXT NOT NULL,
	run_id      TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	updated_at  TEXT NOT NULL,
	PRIMARY KEY (learner, block)
);
CREATE INDEX records_lesson ON records (learner, lesson);
