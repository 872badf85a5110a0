// Package store keeps each learner's progress, the saved runs of live
// sweeps and the class sessions: in one SQLite file (Open, the default:
// nothing to install), or in a Postgres database that several servers
// share (OpenPostgres).
//
// SQLite: the file is opened through modernc.org/sqlite (pure Go, no cgo)
// in WAL mode with a busy timeout of 5 s and foreign keys on.
//
// Postgres: the database is reached through jackc/pgx (its database/sql
// driver), at most 16 connections a Store (and one for wake-ups, below),
// with lock_timeout 5s (as SQLite's busy timeout) and application_name
// capacitylab unless the URL sets them. The URL is postgres://user:password@host:port/database with
// pgx's settings (sslmode, connect_timeout, search_path for a schema of
// its own, ...); a server that cannot connect, or is refused, fails at
// start with one line naming host, port, database and user, never the
// password. A connection Postgres ends (a restart, a failover,
// pg_terminate_backend) fails the statement it was running, which the
// caller sees as an error (nothing acknowledged is lost), and the next
// statement runs on a new connection: ones idle over a second are checked
// before use.
//
// One implementation serves both (dialect.go): every query is written once
// with SQLite's placeholders and rebound to $N for Postgres; the
// differences are the schema's types, the errors for a unique key and a
// full disk, and how raw records are inserted (AddRecords).
//
// The schema is built by the numbered SQL files embedded from
// migrations/ (001_init.sql, ...): each file is applied once, in order,
// inside a transaction, and the highest applied number is kept in the
// one-row table schema_version. Postgres starts from
// migrations/postgres/100_schema.sql, the schema of the SQLite files 001
// to 100 in one file with Postgres's types (BOOLEAN, BIGINT, DOUBLE
// PRECISION, an identity column, text compared bytewise as SQLite does);
// files after 100 are shared, written in the SQL both take, and a file
// migrations/postgres/N.sql replaces shared file N only where the two
// cannot share one. Servers starting at once on one Postgres take an
// advisory lock (per schema) while they migrate, so one migrates and the
// others find it done. A database whose schema_version is newer than this
// binary knows is refused at start with one line (SchemaError): a newer
// server has migrated it.
//
// A full disk (health.go): a write that fails for lack of room fails
// with an error IsFull reports (SQLite's SQLITE_FULL, Postgres's disk_full,
// SQLSTATE 53100, "could not extend file"), and WriteHealth
// says writes are failing, and since when, until a later write succeeds
// or a small write WriteHealth tries itself (every 2 s while writes fail)
// does.
// When the disk is so full that the file cannot even be opened for writing
// (SQLite cannot create its WAL index), Open opens it read-only (immutable)
// if its write-ahead log holds nothing and its schema is this program's:
// reads work, every write fails with ErrFull, until it is opened again.
// FullWhen fails writes exactly as the database does on a full disk, for
// tests that cannot mount a small file system.
//
// Tables (times are RFC 3339 strings in UTC, with nanoseconds, as text in
// both databases; booleans are 0 or 1 on SQLite, BOOLEAN on Postgres):
//
//	learners(id, created_at)
//	    one row per anonymous learner; id is the cookie value the web
//	    package issues (32 lower-case hex digits, 128 random bits).
//	predictions(learner, lesson, block, option, skipped, locked_at, revealed_at, opened_at)
//	    at most one row per learner and predict block. It is written once,
//	    by Lock (option set) or Skip (skipped = 1); afterwards only
//	    revealed_at (Reveal) and opened_at (OpenResults: the learner opened
//	    the recorded results that settle it; '' until then) may be set,
//	    each once. The store enforces this: a second Lock with another
//	    option, or a Lock after a Skip, returns ErrLocked.
//	check_attempts(id, learner, lesson, block, option, correct, at)
//	    every answer to a check block, in order; the first per learner and
//	    block is the one that counts for progress.
//	model_goals(learner, lesson, block, values_json, reached_at)
//	    the first time a learner reached a model block's goal, with the
//	    widget values at that moment.
//	records(learner, lesson, block, fields_json, run_id, created_at, updated_at)
//	    the record a learner wrote in a record block (SaveRecord): the
//	    fields as a JSON object of strings, the saved run attached ('' =
//	    none). One row per learner and block; saving again replaces the
//	    fields and run and sets updated_at, keeping created_at.
//
// Saved runs (050_runs.sql; SaveRun, AddRow, AddRecords, Run, Runs). They
// are not tied to the learners table: a learner resetting their progress
// does not erase measurements others may have watched. Uploads are the
// exception (130_uploads.sql; uploads.go): a learner's own results file
// stored as a run of theirs (SaveUpload: the run, its rows and records in
// one transaction) with upload set, private to them (Runs lists no one
// else's), deleted by Reset with the rest of their progress and by
// DeleteUpload, only theirs.
//
//	runs(id, learner, lesson, block, request, status, reason, created_at, started_at, ended_at, upload)
//	    one row per sweep: request is the runner's request as JSON; status
//	    is queued, running, done, failed, cancelled or interrupted (runs
//	    left running by a crash are marked interrupted at start-up, by
//	    InterruptRuns, which knows no owner: only the single server,
//	    --role all, calls it; across processes a running run has its
//	    runner, and a lost runner's runs are reaped, below);
//	    started_at and ended_at are '' until they happen.
//	run_rows(run_id, win, row)
//	    one row per finished window, row being result.Row as JSON.
//	run_records(run_id, win, seq, intended_us, sent_us, end_us, outcome, status, reason, queue_wait_ms, service_ms,
//	            request, attempt, class, sub, copy)   (request, attempt, class: 140_attempts.sql; sub, copy: 150_subs.sql)
//	    every raw request record (a retrying client's: every attempt; a
//	    fanned-out request's: every sub-request; a hedged one's: every copy):
//	    times in microseconds from the window's start, outcome a
//	    result.Outcome, queue_wait_ms and service_ms -1 when absent,
//	    request and attempt the attempt's logical request and number,
//	    class a result.Class, sub the sub-request's index, copy the
//	    hedge copy's number (0: the request itself). Rows and records go with their run (ON DELETE CASCADE).
//	run_events(run_id, seq, kind, event)   (100_run_events.sql)
//	    every event of the run's log (package runner) as it was logged and
//	    sent: its sequence number, kind and JSON; WriteRun, RunEvents,
//	    LastRunEvent. Goes with its run. At most one terminal event (done,
//	    failed, cancelled, interrupted) per run, a unique index
//	    (120_one_end.sql), and a stored terminal event is never replaced.
//
// A run's owner writes it with WriteRun: the events logged since its last
// write, a finished window's records and row, and with its terminal event
// the run's final state, in one transaction with one wake-up, fenced by
// its claim: the statement that begins it locks the run's row and checks
// that the run is still queued or running and held by the writer (the
// runner id ClaimRun recorded, "" for the in-process queue's runs), and a
// write after the run ended elsewhere fails with ErrNotOwner, storing
// nothing. Every part replaces what is stored at its key, so a write is
// safe to send again when its connection was lost mid-commit. AddRow,
// AddRecords and AddRunEvent write without a claim, for tests and tools.
//
// The distributed sweep queue (110_queue.sql; queue.go; package fleet, on
// Postgres only): runs gain addr (the client address that asked, for the
// per-address share across replicas), runner (the runner process holding
// a running run) and job_id (its River job; River's own river_* tables are
// migrated by rivermigrate under the same start lock). SubmitRun stores a
// run, its seq-1 queued event and its job in one transaction under an
// advisory lock; ClaimRun, AppendQueuedEvent, CancelQueuedRun and
// ReapLostRuns change a run only under its row's lock and only from the
// status they expect.
//
//	runners(id, host, slots, started, heartbeat)
//	    one row per runner process: how many runs it runs at once, and
//	    its last heartbeat by the database's clock (Heartbeat); a running
//	    run whose runner's heartbeat is too old is failed "runner lost"
//	    (ReapLostRuns; package fleet judges heartbeats only once its own
//	    way to the database has worked for that long, so an outage does
//	    not fail live runs). LiveSlots sums the live runners' slots.
//
// Wake-ups (wake.go). A server learns at once that a run's events or a
// class session's votes were written, by itself or by another server on
// the same Postgres database: WatchRun(id) and WatchClass(code) return a
// Watch whose channel C receives a Wake after each write of the run's
// events (WriteRun, AddRunEvent; Seq: the highest sequence number
// written) and after each change of the session (a SaveClassVotes batch, AddClassParticipant, SaveClassRound,
// UpdateClassSession, EndClassSession, EndIdleClassSessions; not
// TouchClassSession, which only stores the last activity), once it is
// committed. Wake-ups are hints to read the
// store again, never the data: one not yet received is merged with the
// next (the higher Seq; Missed if either was), so a slow reader is never
// blocked on and never blocks the writer.
//
// On SQLite (one process) the Store delivers them itself after the
// commit. On Postgres the write sends them in its own transaction
// (pg_notify on the channel "capacitylab_wake:<schema>", payload "run <id>
// <seq>" or "class <code>"), and Postgres delivers them at commit, in
// commit order, to every Store listening: each Store keeps one connection
// of its own (application_name capacitylab-wake; from the first Watch
// until Close) that LISTENs on the channel, checks itself with a round
// trip after 15 s without a notification, and when lost connects again
// after 50 ms, doubling to at most 5 s. Wake-ups sent while it was not
// listening reach nobody, so when it listens again (and when it first
// does) every Watch receives a Wake with Missed set; WakeErr says why it
// is not listening meanwhile.
//
// How a stream uses them (package web's follower of a run another
// process holds, streamfollow.go):
//
//	w := st.WatchRun(id) // first, so nothing written after the read below is missed
//	defer w.Close()
//	last := resumeFrom    // the seq the browser already has (0: from the start)
//	for {
//	    evs, err := st.RunEvents(ctx, id, last) // everything stored after last, in order
//	    ... send evs to the socket; last = the highest seq sent; stop after the run's end event ...
//	    select {
//	    case <-w.C(): // a new event, or Missed: either way read again from last
//	    case <-ctx.Done(): return
//	    }
//	}
//
// Because the stored sequence is the truth and a wake-up only says "read
// again", a replica that loses its listening connection, or a browser
// that moves to another replica with its last seq, misses nothing. One
// Watch per run and replica is enough: the replica's hub fans the events
// it reads out to all its sockets on that run. A class session works the
// same way: on a wake-up of WatchClass the replica reads the session
// once (ClassSession) and sends what changed to its sockets (package
// classroom, "Across servers"; SharedClasses says whether it must).
//
// Class sessions (060_sessions.sql, 080_class_answers.sql; package
// classroom). Tokens are stored
// only as SHA-256 hashes (hex).
//
//	class_sessions(code, lesson, host_hash, focus, run_id, created_at, active_at, ended_at)
//	    one row per session: the six-character join code, the lesson, the
//	    host token's hash, the question the class is on, the last run
//	    started for the class, the last activity (idle expiry counts from
//	    it) and ended_at ('' while live).
//	class_participants(session, id, token_hash, name, joined_at)
//	    participants numbered 1, 2, ... within a session, with their token's
//	    hash (unique per session) and display name.
//	class_rounds(session, question, round, status, opened_at, closed_at, revealed_at, answered_at)
//	    each voting round (1, 2) of a question: open, closed or revealed
//	    (the spread of its votes shown). answered_at is set on a question's
//	    last round when the host shows the answer, the reveal's second
//	    step ('' until then).
//	class_votes(session, question, round, participant, option, at)
//	    one vote per participant per round, changed in place until the
//	    round closes.
//	class_presence(session, server, participant, seen)
//	    (125_class_presence.sql, presence.go; used on Postgres only) one
//	    row per participant with a socket open on a server sharing the
//	    sessions, renewed by that server (HeartbeatClassPresence, by the
//	    database's clock); SetClassPresence, ExpireClassPresence (a server
//	    silent too long) and ForgetClassPresence (a server stopping) wake
//	    the session's watchers, and ClassPresent reads who is connected
//	    through the other servers.
//
// LTI 1.3 (090_lti.sql; package lti). Times are the fixed-width stamps of
// the class tables, lists JSON arrays of strings; states, session tokens
// and deep linking ids are kept only as SHA-256 hashes (hex).
//
//	lti_platforms(issuer, client_id, name, auth_url, token_url, jwks_url, token_audience, deployments, frame_origins, created_at, updated_at)
//	    the platforms `server lti add` registered (SaveLTIPlatform).
//	lti_keys(kid, private_pem, created_at, signs_from)
//	    the tool's RSA keys (PKCS #8 PEM), at most the newest three
//	    (AddLTIKey); the newest whose signs_from has come signs.
//	lti_logins(state_hash, nonce, issuer, client_id, created_at, expires_at, used_at)
//	    each login initiation; a launch uses it once (UseLTILogin). Expired
//	    rows go when a new login is saved, and a login is refused while the
//	    limit its caller gives is stored (SaveLTILogin).
//	lti_users(issuer, subject, learner, name, created_at, seen_at)
//	    a platform's user as one learner of ours (LTILearner), with the
//	    name the platform sent at the last launch.
//	lti_sessions(token_hash, learner, issuer, client_id, deployment_id, context_id, context_title, instructor, created_at, expires_at)
//	    a launch's session, found by the hash of its cookie's token.
//	lti_deep_links(id_hash, issuer, client_id, deployment_id, return_url, data, multiple, created_at, expires_at, used_at)
//	    a deep linking request waiting for the instructor's choice.
//	lti_grades(issuer, client_id, resource_link, learner, deployment_id, subject, lesson, lineitem, context_id, context_title,
//	           link_title, status, version, score_given, score_max, sent_version, sent_at, attempts, next_at, last_error, updated_at)
//	    one row per learner and graded placement: its line item, and the
//	    posting of their score: status pending (due at next_at), sent or
//	    failed (gave up); version counts progress changes, and a post only
//	    marks the row sent if no change came while it was in flight.
//
// Deleting a learner (Reset) removes every row of theirs in the progress
// tables above (learners to records). Their lti_users row stays, so their
// next launch finds the same (now empty) learner.
//
// Reading a learner's state in one lesson (LessonState, on every lesson
// page view) is one prepared UNION ALL query over predictions,
// check_attempts, model_goals and records, and its result is kept in
// memory until any write of progress through this Store (learnercache.go).
// That is sound only while this Store is the one process writing the
// file, as cmd/server is with SQLite. On Postgres other servers write the
// same tables, so nothing is kept: every read asks the database (one
// round trip for a page view's state). The record form's list of the
// learner's own runs (LearnerRuns) is a prepared query on the
// runs_learner index.
//
// Export, the learner's progress as JSON (GET /api/progress), is:
//
//	{
//	  "learner": "5f0c...",
//	  "exported_at": "2026-11-30T10:40:00Z",
//	  "predictions": [{"lesson": "...", "block": "...", "option": "b",
//	                   "skipped": false, "locked_at": "...", "revealed_at": "...",
//	                   "opened_at": "..."}],
//	  "check_attempts": [{"lesson": "...", "block": "...", "option": "a",
//	                      "correct": true, "first": true, "at": "..."}],
//	  "model_goals": [{"lesson": "...", "block": "...",
//	                   "values": {"arrivals": 48}, "reached_at": "..."}],
//	  "records": [{"lesson": "...", "block": "...",
//	               "fields": {"setting": "...", "criterion": "...", ...},
//	               "run": "r-...", "created_at": "...", "updated_at": "..."}]
//	}
//
// revealed_at is left out until the learner reveals, opened_at until they
// open the recorded results, run when no run is attached; lists are []
// when empty.
package store
