-- 125: which class participants have a socket open on which server, so a
-- host on one server sees participants connected through another
-- (package classroom, on Postgres, where servers share the sessions). One
-- server writes SQLite and keeps presence in memory: it never uses this
-- table, which exists so both databases have the same tables.
CREATE TABLE class_presence (
	session     TEXT NOT NULL,
	server      TEXT NOT NULL,             -- the server the participant's sockets are on
	participant INTEGER NOT NULL,
	seen        TEXT NOT NULL,             -- that server's last heartbeat
	PRIMARY KEY (session, server, participant)
);
