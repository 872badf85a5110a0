package store

import (
	"context"
	"database/sql"
	"time"
)

// Class presence across servers (migration 125; Postgres only, where
// several servers share the sessions): a row per participant and server
// on which that participant has a socket open. The server that holds the
// sockets writes its rows (SetClassPresence) and renews them
// (HeartbeatClassPresence), by the database's clock; any server deletes
// the rows of a server whose heartbeat is too old (ExpireClassPresence),
// so a server that died stops counting its participants as connected.
// Every change wakes the session's presence watchers (WatchClassPresence)
// in its transaction, as the session's other changes wake WatchClass.

// SetClassPresence records whether participant of session code has a
// socket open on server (here) or not, and wakes the session's presence
// watchers.
func (s *Store) SetClassPresence(ctx context.Context, code, server string, participant int, here bool) error {
	if !s.db.d.postgres {
		return ErrNotPostgres
	}
	if here {
		_, err := s.wakeWrite(ctx, wakeKey("presence", code), `INSERT INTO class_presence (session, server, participant, seen) VALUES (?, ?, ?, now())
			ON CONFLICT (session, server, participant) DO UPDATE SET seen = excluded.seen`, code, server, participant)
		return err
	}
	_, err := s.wakeWrite(ctx, wakeKey("presence", code), `DELETE FROM class_presence WHERE session = ? AND server = ? AND participant = ?`, code, server, participant)
	return err
}

// HeartbeatClassPresence renews every presence row of server: it is
// alive. It changes nothing anyone sees, so it wakes nobody.
func (s *Store) HeartbeatClassPresence(ctx context.Context, server string) error {
	if !s.db.d.postgres {
		return ErrNotPostgres
	}
	_, err := s.db.ExecContext(ctx, `UPDATE class_presence SET seen = now() WHERE server = ?`, server)
	return err
}

// ExpireClassPresence deletes the presence rows whose heartbeat is older
// than lost (their server stopped without deleting them), wakes the
// presence watchers of each session that had one, and returns those
// sessions.
func (s *Store) ExpireClassPresence(ctx context.Context, lost time.Duration) ([]string, error) {
	return s.dropClassPresence(ctx, `DELETE FROM class_presence WHERE seen < now() - ? * interval '1 millisecond' RETURNING session`, lost.Milliseconds())
}

// ForgetClassPresence deletes every presence row of server (it is
// stopping, its sockets closed) and wakes the presence watchers of each
// session that had one.
func (s *Store) ForgetClassPresence(ctx context.Context, server string) error {
	_, err := s.dropClassPresence(ctx, `DELETE FROM class_presence WHERE server = ? RETURNING session`, server)
	return err
}

// dropClassPresence runs a DELETE ... RETURNING session and wakes each
// session it names once, in the same transaction.
func (s *Store) dropClassPresence(ctx context.Context, del string, arg any) ([]string, error) {
	if !s.db.d.postgres {
		return nil, ErrNotPostgres
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, del, arg)
	if err != nil {
		return nil, err
	}
	codes, err := distinctCodes(rows)
	if err != nil {
		return nil, err
	}
	for _, c := range codes {
		if _, err := tx.ExecContext(ctx, wakeSQL, wakeKey("presence", c)); err != nil {
			return nil, err
		}
	}
	return codes, tx.Commit()
}

// distinctCodes is scanCodes without repeats, in first-seen order.
func distinctCodes(rows *sql.Rows) ([]string, error) {
	all, err := scanCodes(rows)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range all {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// ClassPresent returns the participants of session code with a socket
// open on a server other than except whose heartbeat is younger than
// lost, in id order.
func (s *Store) ClassPresent(ctx context.Context, code, except string, lost time.Duration) ([]int, error) {
	if !s.db.d.postgres {
		return nil, ErrNotPostgres
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT participant FROM class_presence
		WHERE session = ? AND server <> ? AND seen > now() - ? * interval '1 millisecond' ORDER BY participant`, code, except, lost.Milliseconds())
	if err != nil {
		return nil, err
	}
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, closeRows(rows)
}
