-- 001: learners, predictions, check attempts and model goals.
CREATE TABLE learners (
	id         TEXT PRIMARY KEY,
	created_at TEXT NOT NULL
);

-- One row per learner and predict block. A row is written once (lock or
-- skip) and only revealed_at may change afterwards.
CREATE TABLE predictions (
	learner     TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
	lesson      TEXT NOT NULL,
	block       TEXT NOT NULL,
	option      TEXT NOT NULL DEFAULT '',
	skipped     INTEGER NOT NULL DEFAULT 0,
	locked_at   TEXT NOT NULL,
	revealed_at TEXT,
	PRIMARY KEY (learner, block)
);
CREATE INDEX predictions_lesson ON predictions (learner, lesson);

-- Every answer to a check block, in order. The first one counts.
CREATE TABLE check_attempts (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	learner  TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
	lesson   TEXT NOT NULL,
	block    TEXT NOT NULL,
	option   TEXT NOT NULL,
	correct  INTEGER NOT NULL,
	at       TEXT NOT NULL
);
CREATE INDEX check_attempts_block ON check_attempts (learner, block, id);
CREATE INDEX check_attempts_lesson ON check_attempts (learner, lesson);

-- The first time a learner reached a model block's goal, with the values.
CREATE TABLE model_goals (
	learner    TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
	lesson     TEXT NOT NULL,
	block      TEXT NOT NULL,
	values_json TEXT NOT NULL,
	reached_at TEXT NOT NULL,
	PRIMARY KEY (learner, block)
);
CREATE INDEX model_goals_lesson ON model_goals (learner, lesson);
