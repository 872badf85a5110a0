-- 060: instructor-run class sessions (package classroom): the session, its
-- participants, each question's rounds and every participant's vote per
-- round. Tokens are stored only as SHA-256 hashes (hex).
CREATE TABLE class_sessions (
	code        TEXT PRIMARY KEY,          -- join code, six characters
	lesson      TEXT NOT NULL,             -- lesson slug
	host_hash   TEXT NOT NULL,             -- SHA-256 of the host token
	focus       TEXT NOT NULL DEFAULT '',  -- the question the class is on
	run_id      TEXT NOT NULL DEFAULT '',  -- the last run started for the class
	created_at  TEXT NOT NULL,
	active_at   TEXT NOT NULL,             -- last activity; idle expiry counts from here
	ended_at    TEXT NOT NULL DEFAULT ''   -- '' while the session is live
);
CREATE INDEX class_sessions_active ON class_sessions (ended_at, active_at);

CREATE TABLE class_participants (
	session    TEXT NOT NULL REFERENCES class_sessions(code) ON DELETE CASCADE,
	id         INTEGER NOT NULL,           -- 1, 2, ... within the session
	token_hash TEXT NOT NULL,              -- SHA-256 of the participant's token
	name       TEXT NOT NULL DEFAULT '',
	joined_at  TEXT NOT NULL,
	PRIMARY KEY (session, id)
);
CREATE UNIQUE INDEX class_participants_token ON class_participants (session, token_hash);

CREATE TABLE class_rounds (
	session     TEXT NOT NULL REFERENCES class_sessions(code) ON DELETE CASCADE,
	question    TEXT NOT NULL,
	round       INTEGER NOT NULL,          -- 1, 2
	status      TEXT NOT NULL,             -- open, closed, revealed
	opened_at   TEXT NOT NULL,
	closed_at   TEXT NOT NULL DEFAULT '',
	revealed_at TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (session, question, round)
);

-- One vote per participant per round; changed in place until the round closes.
CREATE TABLE class_votes (
	session     TEXT NOT NULL,
	question    TEXT NOT NULL,
	round       INTEGER NOT NULL,
	participant INTEGER NOT NULL,
	option      TEXT NOT NULL,
	at          TEXT NOT NULL,
	PRIMARY KEY (session, question, round, participant),
	FOREIGN KEY (session, question, round) REFERENCES class_rounds(session, question, round) ON DELETE CASCADE
) WITHOUT ROWID;
