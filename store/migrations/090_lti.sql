-- 080: LTI 1.3 (package lti). Times are the fixed-width stamps of the class
-- tables, so comparing two as text compares them in time. Lists are JSON
-- arrays of strings. Tokens and ids that prove something are stored only as
-- SHA-256 hashes (hex).

-- The learning platforms registered with `server lti add` (a platforms file
-- adds others in memory only).
CREATE TABLE lti_platforms (
	issuer         TEXT NOT NULL,
	client_id      TEXT NOT NULL,
	name           TEXT NOT NULL DEFAULT '',
	auth_url       TEXT NOT NULL,             -- OIDC authorization endpoint
	token_url      TEXT NOT NULL,             -- OAuth 2 token endpoint (grades)
	jwks_url       TEXT NOT NULL,             -- the platform's public keys
	token_audience TEXT NOT NULL DEFAULT '',  -- aud of our client assertion; '' = token_url
	deployments    TEXT NOT NULL,             -- JSON array of deployment ids
	frame_origins  TEXT NOT NULL DEFAULT '[]',-- JSON array: origins that frame our pages
	created_at     TEXT NOT NULL,
	updated_at     TEXT NOT NULL,
	PRIMARY KEY (issuer, client_id)
);

-- The tool's own RSA keys, newest last; PKCS #8 PEM.
CREATE TABLE lti_keys (
	kid         TEXT PRIMARY KEY,
	private_pem TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	signs_from  TEXT NOT NULL                 -- when it becomes the signing key
);

-- One row per login initiation: the state and nonce we sent to the
-- platform, used at most once by the launch that follows.
CREATE TABLE lti_logins (
	state_hash  TEXT PRIMARY KEY,
	nonce       TEXT NOT NULL,
	issuer      TEXT NOT NULL,
	client_id   TEXT NOT NULL,
	created_at  TEXT NOT NULL,
	expires_at  TEXT NOT NULL,
	used_at     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX lti_logins_expires ON lti_logins (expires_at);

-- A platform's user (issuer, subject) is one learner of ours.
CREATE TABLE lti_users (
	issuer     TEXT NOT NULL,
	subject    TEXT NOT NULL,
	learner    TEXT NOT NULL UNIQUE,
	name       TEXT NOT NULL DEFAULT '',      -- the name claim, for the instructor's grade list
	created_at TEXT NOT NULL,
	seen_at    TEXT NOT NULL,
	PRIMARY KEY (issuer, subject)
);

-- A launch's session: the cookie holds the token, this row its hash.
CREATE TABLE lti_sessions (
	token_hash    TEXT PRIMARY KEY,
	learner       TEXT NOT NULL,
	issuer        TEXT NOT NULL,
	client_id     TEXT NOT NULL,
	deployment_id TEXT NOT NULL,
	context_id    TEXT NOT NULL DEFAULT '',
	context_title TEXT NOT NULL DEFAULT '',
	instructor    INTEGER NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	expires_at    TEXT NOT NULL
);
CREATE INDEX lti_sessions_expires ON lti_sessions (expires_at);

-- A deep linking request waiting for the instructor's choice.
CREATE TABLE lti_deep_links (
	id_hash       TEXT PRIMARY KEY,
	issuer        TEXT NOT NULL,
	client_id     TEXT NOT NULL,
	deployment_id TEXT NOT NULL,
	return_url    TEXT NOT NULL,
	data          TEXT NOT NULL DEFAULT '',
	multiple      INTEGER NOT NULL DEFAULT 0,
	created_at    TEXT NOT NULL,
	expires_at    TEXT NOT NULL,
	used_at       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX lti_deep_links_expires ON lti_deep_links (expires_at);

-- One row per learner and graded placement (a resource link with a line
-- item): where their score goes, and the state of posting it. version
-- counts changes of progress; a post that raced with a change leaves the
-- row pending.
CREATE TABLE lti_grades (
	issuer         TEXT NOT NULL,
	client_id      TEXT NOT NULL,
	resource_link  TEXT NOT NULL,
	learner        TEXT NOT NULL,
	deployment_id  TEXT NOT NULL,
	subject        TEXT NOT NULL,             -- userId in the score
	lesson         TEXT NOT NULL,
	lineitem       TEXT NOT NULL,             -- the line item's URL
	context_id     TEXT NOT NULL DEFAULT '',
	context_title  TEXT NOT NULL DEFAULT '',
	link_title     TEXT NOT NULL DEFAULT '',
	status         TEXT NOT NULL,             -- pending, sent, failed
	version        INTEGER NOT NULL DEFAULT 1,
	score_given    REAL NOT NULL DEFAULT 0,   -- the last score computed
	score_max      REAL NOT NULL DEFAULT 0,
	sent_version   INTEGER NOT NULL DEFAULT 0,
	sent_at        TEXT NOT NULL DEFAULT '',
	attempts       INTEGER NOT NULL DEFAULT 0,-- failed posts since the last success
	next_at        TEXT NOT NULL,             -- when a pending post is due
	last_error     TEXT NOT NULL DEFAULT '',
	updated_at     TEXT NOT NULL,
	PRIMARY KEY (issuer, client_id, resource_link, learner)
);
CREATE INDEX lti_grades_due ON lti_grades (status, next_at);
CREATE INDEX lti_grades_learner ON lti_grades (learner, lesson);
CREATE INDEX lti_grades_context ON lti_grades (issuer, client_id, context_id);
