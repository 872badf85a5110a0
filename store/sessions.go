package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Errors of the class-session methods.
var (
	// ErrNoSession: there is no class session with that code.
	ErrNoSession = errors.New("no such class session")
	// ErrCodeTaken: CreateClassSession was given a code already in use.
	ErrCodeTaken = errors.New("class session code already in use")
	// ErrRoundNotOpen: a vote was saved for a round that is not open.
	ErrRoundNotOpen = errors.New("round is not open")
	// ErrParticipantTaken: AddClassParticipant was given an id already
	// stored for the session (another server added that participant
	// first).
	ErrParticipantTaken = errors.New("class participant id already in use")
)

// Round statuses of a class question.
const (
	RoundOpen     = "open"
	RoundClosed   = "closed"
	RoundRevealed = "revealed"
)

// ClassSession is an instructor-run session as stored: the session row and,
// when read with ClassSession, its participants, rounds and votes.
type ClassSession struct {
	Code      string
	Lesson    string
	HostHash  string // SHA-256 of the host token, hex
	Focus     string // the question the class is on
	RunID     string // the last run started for the class
	CreatedAt time.Time
	ActiveAt  time.Time
	EndedAt   time.Time // zero while live

	Participants []ClassParticipant // by id
	Rounds       []ClassRound       // by question, round
	Votes        []ClassVote        // by question, round, participant
}

// Ended reports whether the session has ended.
func (c ClassSession) Ended() bool { return !c.EndedAt.IsZero() }

// ClassParticipant is one learner who joined a session.
type ClassParticipant struct {
	ID        int
	TokenHash string // SHA-256 of the participant's token, hex
	Name      string
	JoinedAt  time.Time
}

// ClassRound is one round of voting on one question.
type ClassRound struct {
	Question   string
	Round      int
	Status     string // RoundOpen, RoundClosed or RoundRevealed
	OpenedAt   time.Time
	ClosedAt   time.Time
	RevealedAt time.Time
	// AnsweredAt is when the host showed the question's answer (the
	// second step of the reveal, after the spread); zero until then. Only
	// a question's last round has it.
	AnsweredAt time.Time
}

// ClassVote is a participant's vote in one round.
type ClassVote struct {
	Question    string
	Round       int
	Participant int
	Option      string
	At          time.Time
}

// classStamp is the fixed-width time format of the class tables, so that
// comparing two stored times as text compares them in time.
const classStamp = "2006-01-02T15:04:05.000000Z07:00"

func classStampOf(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(classStamp)
}

func classTimeOf(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	return parseTime(v)
}

// CreateClassSession stores a new session (its row only). A code already
// in use returns ErrCodeTaken.
func (s *Store) CreateClassSession(ctx context.Context, c ClassSession) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO class_sessions (code, lesson, host_hash, focus, run_id, created_at, active_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, c.Code, c.Lesson, c.HostHash, c.Focus, c.RunID, classStampOf(c.CreatedAt), classStampOf(c.ActiveAt))
	if isUnique(err) {
		return fmt.Errorf("session %s: %w", c.Code, ErrCodeTaken)
	}
	return err
}

// ClassSession reads a session with its participants, rounds and votes
// (the votes last, so a round read as closed comes with all its votes).
func (s *Store) ClassSession(ctx context.Context, code string) (ClassSession, error) {
	c, err := s.ClassSessionHead(ctx, code, 0)
	if err != nil {
		return c, err
	}
	c.Votes, err = s.classVotes(ctx, `WHERE session = ?`, code)
	return c, err
}

// ClassSessionHead reads a session as ClassSession does but without its
// votes, and only the participants whose id is above afterParticipant: what
// a server that holds the session already has need not be read again.
func (s *Store) ClassSessionHead(ctx context.Context, code string, afterParticipant int) (ClassSession, error) {
	var c ClassSession
	var created, active, ended string
	err := s.db.QueryRowContext(ctx, `SELECT code, lesson, host_hash, focus, run_id, created_at, active_at, ended_at
		FROM class_sessions WHERE code = ?`, code).Scan(&c.Code, &c.Lesson, &c.HostHash, &c.Focus, &c.RunID, &created, &active, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("session %s: %w", code, ErrNoSession)
	}
	if err != nil {
		return c, err
	}
	c.CreatedAt, c.ActiveAt, c.EndedAt = classTimeOf(created), classTimeOf(active), classTimeOf(ended)

	rows, err := s.db.QueryContext(ctx, `SELECT id, token_hash, name, joined_at FROM class_participants
		WHERE session = ? AND id > ? ORDER BY id`, code, afterParticipant)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var p ClassParticipant
		var at string
		if err := rows.Scan(&p.ID, &p.TokenHash, &p.Name, &at); err != nil {
			rows.Close()
			return c, err
		}
		p.JoinedAt = classTimeOf(at)
		c.Participants = append(c.Participants, p)
	}
	if err := closeRows(rows); err != nil {
		return c, err
	}

	rows, err = s.db.QueryContext(ctx, `SELECT question, round, status, opened_at, closed_at, revealed_at, answered_at FROM class_rounds
		WHERE session = ? ORDER BY question, round`, code)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var r ClassRound
		var o, cl, rv, an string
		if err := rows.Scan(&r.Question, &r.Round, &r.Status, &o, &cl, &rv, &an); err != nil {
			rows.Close()
			return c, err
		}
		r.OpenedAt, r.ClosedAt, r.RevealedAt, r.AnsweredAt = classTimeOf(o), classTimeOf(cl), classTimeOf(rv), classTimeOf(an)
		c.Rounds = append(c.Rounds, r)
	}
	return c, closeRows(rows)
}

// ClassRoundVotes reads the votes of one round of a session, by
// participant.
func (s *Store) ClassRoundVotes(ctx context.Context, code, question string, round int) ([]ClassVote, error) {
	return s.classVotes(ctx, `WHERE session = ? AND question = ? AND round = ?`, code, question, round)
}

// classVotes reads the votes the where clause picks, by question, round and
// participant.
func (s *Store) classVotes(ctx context.Context, where string, args ...any) ([]ClassVote, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT question, round, participant, option, at FROM class_votes
		`+where+` ORDER BY question, round, participant`, args...)
	if err != nil {
		return nil, err
	}
	var votes []ClassVote
	for rows.Next() {
		var v ClassVote
		var at string
		if err := rows.Scan(&v.Question, &v.Round, &v.Participant, &v.Option, &at); err != nil {
			rows.Close()
			return nil, err
		}
		v.At = classTimeOf(at)
		votes = append(votes, v)
	}
	return votes, closeRows(rows)
}

// AddClassParticipant stores a participant of session code and wakes the
// session's watchers. An id already stored returns ErrParticipantTaken.
func (s *Store) AddClassParticipant(ctx context.Context, code string, p ClassParticipant) error {
	_, err := s.classWrite(ctx, code, `INSERT INTO class_participants (session, id, token_hash, name, joined_at)
		VALUES (?, ?, ?, ?, ?)`, code, p.ID, p.TokenHash, p.Name, classStampOf(p.JoinedAt))
	if isUnique(err) {
		return fmt.Errorf("session %s participant %d: %w", code, p.ID, ErrParticipantTaken)
	}
	return err
}

// SaveClassRound stores a round or updates its status and times, and
// wakes the session's watchers.
func (s *Store) SaveClassRound(ctx context.Context, code string, r ClassRound) error {
	_, err := s.classWrite(ctx, code, `INSERT INTO class_rounds (session, question, round, status, opened_at, closed_at, revealed_at, answered_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session, question, round) DO UPDATE SET
			status = excluded.status, closed_at = excluded.closed_at, revealed_at = excluded.revealed_at, answered_at = excluded.answered_at`,
		code, r.Question, r.Round, r.Status, classStampOf(r.OpenedAt), classStampOf(r.ClosedAt), classStampOf(r.RevealedAt), classStampOf(r.AnsweredAt))
	return err
}

// classWrite runs one statement that changes class session code and
// wakes the session's watchers (WatchClass) once it is committed: on
// Postgres with a notification in the statement's own transaction, so
// every server sharing the database hears of it; on SQLite after it.
func (s *Store) classWrite(ctx context.Context, code, query string, args ...any) (sql.Result, error) {
	return s.wakeWrite(ctx, wakeKey("class", code), query, args...)
}

// wakeWrite runs one statement and wakes the watchers of key once it is
// committed, as classWrite does.
func (s *Store) wakeWrite(ctx context.Context, key, query string, args ...any) (sql.Result, error) {
	if !s.db.d.postgres {
		res, err := s.db.ExecContext(ctx, query, args...)
		if err == nil {
			s.wakes.wake(key, Wake{})
		}
		return res, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, wakeSQL, key); err != nil {
		return nil, err
	}
	return res, tx.Commit()
}

// SaveClassVote stores a vote, replacing the participant's earlier vote in
// the same round. The database refuses it with ErrRoundNotOpen unless the
// round is stored as open, so a closed round's votes cannot change.
func (s *Store) SaveClassVote(ctx context.Context, code string, v ClassVote) error {
	return s.SaveClassVotes(ctx, code, []ClassVote{v})
}

// SaveClassVotes stores votes as SaveClassVote does, all in one
// transaction (group commit): if any is refused, none is stored. Once
// they are stored, the session's watchers (WatchClass) wake, on every
// server sharing a Postgres database.
func (s *Store) SaveClassVotes(ctx context.Context, code string, votes []ClassVote) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO class_votes (session, question, round, participant, option, at)
		SELECT ?1, ?2, CAST(?3 AS INTEGER), CAST(?4 AS INTEGER), ?5, ?6 WHERE EXISTS (SELECT 1 FROM class_rounds
			WHERE session = ?1 AND question = ?2 AND round = ?3 AND status = 'open')
		ON CONFLICT (session, question, round, participant) DO UPDATE SET option = excluded.option, at = excluded.at`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, v := range votes {
		res, err := stmt.ExecContext(ctx, code, v.Question, v.Round, v.Participant, v.Option, classStampOf(v.At))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("session %s question %s round %d: %w", code, v.Question, v.Round, ErrRoundNotOpen)
		}
	}
	if s.db.d.postgres && len(votes) > 0 {
		if _, err := tx.ExecContext(ctx, wakeSQL, wakeKey("class", code)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if !s.db.d.postgres && len(votes) > 0 {
		s.wakes.wake(wakeKey("class", code), Wake{})
	}
	return nil
}

// UpdateClassSession stores the session's focus, run and last activity,
// and wakes the session's watchers.
func (s *Store) UpdateClassSession(ctx context.Context, code, focus, runID string, activeAt time.Time) error {
	res, err := s.classWrite(ctx, code, `UPDATE class_sessions SET focus = ?, run_id = ?, active_at = ? WHERE code = ?`,
		focus, runID, classStampOf(activeAt), code)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", code, ErrNoSession)
	}
	return nil
}

// TouchClassSession stores the session's last activity, unless a later
// one is stored (another server's). It changes nothing anyone sees, so it
// wakes nobody.
func (s *Store) TouchClassSession(ctx context.Context, code string, activeAt time.Time) error {
	at := classStampOf(activeAt)
	_, err := s.db.ExecContext(ctx, `UPDATE class_sessions SET active_at = ? WHERE code = ? AND active_at < ?`, at, code, at)
	return err
}

// EndClassSession marks a session ended at the given time (once; a later
// call keeps the first time) and wakes its watchers. Its results stay
// stored.
func (s *Store) EndClassSession(ctx context.Context, code string, at time.Time) error {
	_, err := s.classWrite(ctx, code, `UPDATE class_sessions SET ended_at = ? WHERE code = ? AND ended_at = ''`, classStampOf(at), code)
	return err
}

// EndIdleClassSessions ends every live session whose last activity is
// before idleBefore, wakes their watchers, and returns their codes.
func (s *Store) EndIdleClassSessions(ctx context.Context, idleBefore, at time.Time) ([]string, error) {
	const end = `UPDATE class_sessions SET ended_at = ? WHERE ended_at = '' AND active_at < ? RETURNING code`
	if !s.db.d.postgres {
		rows, err := s.db.QueryContext(ctx, end, classStampOf(at), classStampOf(idleBefore))
		if err != nil {
			return nil, err
		}
		codes, err := scanCodes(rows)
		for _, c := range codes {
			s.wakes.wake(wakeKey("class", c), Wake{})
		}
		return codes, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, end, classStampOf(at), classStampOf(idleBefore))
	if err != nil {
		return nil, err
	}
	codes, err := scanCodes(rows)
	if err != nil {
		return nil, err
	}
	for _, c := range codes {
		if _, err := tx.ExecContext(ctx, wakeSQL, wakeKey("class", c)); err != nil {
			return nil, err
		}
	}
	return codes, tx.Commit()
}

// scanCodes reads a column of session codes and closes rows.
func scanCodes(rows *sql.Rows) ([]string, error) {
	var codes []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		codes = append(codes, c)
	}
	return codes, closeRows(rows)
}

// SharedClasses reports whether other servers may change this store's
// class sessions: true on Postgres, where several servers share one
// database, false on SQLite, which one server writes.
func (s *Store) SharedClasses() bool { return s.db.d.postgres }
