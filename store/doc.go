// Package store keeps each learner's progress in one SQLite file.
//
// The file is opened through modernc.org/sqlite (pure Go, no cgo) in WAL
// mode with a busy timeout of 5 s and foreign keys on. Its schema is built by
// the numbered SQL files embedded from migrations/ (001_init.sql, ...): each
// file is applied once, in order, inside a transaction, and the highest
// applied number is kept in the one-row table schema_version. A file whose
// schema_version is newer than this binary knows is refused.
//
// Tables (times are RFC 3339 strings in UTC, with nanoseconds):
//
//	learners(id, created_at)
//	    one row per anonymous learner; id is the cookie value the web
//	    package issues (32 lower-case hex digits, 128 random bits).
//	predictions(learner, lesson, block, option, skipped, locked_at, revealed_at)
//	    at most one row per learner and predict block. It is written once,
//	    by Lock (option set) or Skip (skipped = 1); afterwards only
//	    revealed_at may be set, once. The store enforces this: a second
//	    Lock with another option, or a Lock after a Skip, returns ErrLocked.
//	check_attempts(id, learner, lesson, block, option, correct, at)
//	    every answer to a check block, in order; the first per learner and
//	    block is the one that counts for progress.
//	model_goals(learner, lesson, block, values_json, reached_at)
//	    the first time a learner reached a model block's goal, with the
//	    widget values at that moment.
//
// Deleting a learner (Reset) removes every row of theirs.
//
// Export, the learner's progress as JSON (GET /api/progress), is:
//
//	{
//	  "learner": "5f0c...",
//	  "exported_at": "2026-11-30T10:40:00Z",
//	  "predictions": [{"lesson": "...", "block": "...", "option": "b",
//	                   "skipped": false, "locked_at": "...", "revealed_at": "..."}],
//	  "check_attempts": [{"lesson": "...", "block": "...", "option": "a",
//	                      "correct": true, "first": true, "at": "..."}],
//	  "model_goals": [{"lesson": "...", "block": "...",
//	                   "values": {"arrivals": 48}, "reached_at": "..."}]
//	}
//
// revealed_at is left out until the learner reveals; lists are [] when empty.
package store
