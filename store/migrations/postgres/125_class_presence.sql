-- 125: class presence across servers (see migrations/125_class_presence.sql).
-- A row says participant has a socket open on server; the server renews
-- seen (the database's clock, so servers whose clocks disagree are judged
-- by one) while it runs, and any server deletes the rows of a server
-- silent too long.
CREATE TABLE class_presence (
	session     TEXT COLLATE "C" NOT NULL,
	server      TEXT COLLATE "C" NOT NULL,
	participant INTEGER NOT NULL,
	seen        TIMESTAMPTZ NOT NULL DEFAULT now(),
	PRIMARY KEY (session, server, participant)
);
CREATE INDEX class_presence_server ON class_presence (server);
CREATE INDEX class_presence_seen ON class_presence (seen);
