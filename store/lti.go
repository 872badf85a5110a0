package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of the LTI methods.
var (
	// ErrNoLTILogin: no login initiation has that state.
	ErrNoLTILogin = errors.New("no such LTI login")
	// ErrNoLTISession: no live launch session has that token.
	ErrNoLTISession = errors.New("no such LTI session")
	// ErrNoLTIDeepLink: no deep linking request has that id.
	ErrNoLTIDeepLink = errors.New("no such LTI deep linking request")
	// ErrLTILoginsFull: as many login initiations as the limit given to
	// SaveLTILogin are waiting for their launches.
	ErrLTILoginsFull = errors.New("too many LTI logins are waiting for their launches")
)

// Statuses of an LTIGrade.
const (
	GradePending = "pending" // a score is due to be posted (at NextAt)
	GradeSent    = "sent"    // the platform took the latest score
	GradeFailed  = "failed"  // posting failed too often; waits for new progress or a retry
)

// LTIPlatform is a learning platform registered with the tool: one client
// id at one issuer, with the deployments it may launch from.
type LTIPlatform struct {
	Issuer        string
	ClientID      string
	Name          string
	AuthURL       string   // OIDC authorization endpoint (login redirect)
	TokenURL      string   // OAuth 2 token endpoint (grades)
	JWKSURL       string   // the platform's public keys
	TokenAudience string   // aud of our client assertion; "" = TokenURL
	Deployments   []string // deployment ids this registration accepts
	FrameOrigins  []string // origins whose pages frame ours
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// LTIKey is one of the tool's RSA signing keys.
type LTIKey struct {
	ID         string // kid
	PrivatePEM string // PKCS #8, PEM
	CreatedAt  time.Time
	SignsFrom  time.Time // when it becomes the key that signs
}

// LTILogin is a login initiation: the state (kept as its hash) and nonce
// sent to the platform.
type LTILogin struct {
	StateHash string
	Nonce     string
	Issuer    string
	ClientID  string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero until a launch used it
}

// LTISession is a launch's session, found by the hash of the token its
// cookie holds.
type LTISession struct {
	Learner      string
	Issuer       string
	ClientID     string
	Deployment   string
	ContextID    string
	ContextTitle string
	Instructor   bool
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// LTIDeepLink is a deep linking request waiting for the instructor's
// choice, found by the hash of its id.
type LTIDeepLink struct {
	Issuer     string
	ClientID   string
	Deployment string
	ReturnURL  string
	Data       string // echoed back to the platform
	Multiple   bool   // the platform accepts several items
	CreatedAt  time.Time
	ExpiresAt  time.Time
	UsedAt     time.Time
}

// LTIGrade is one learner in one graded placement: where their score goes
// and how posting it stands.
type LTIGrade struct {
	Issuer       string
	ClientID     string
	ResourceLink string
	Learner      string
	Deployment   string
	Subject      string // the platform's user id
	Name         string // the learner's name as the platform gave it (read only; from lti_users)
	Lesson       string
	LineItem     string
	ContextID    string
	ContextTitle string
	LinkTitle    string

	Status      string // GradePending, GradeSent or GradeFailed
	Version     int    // changes of progress seen
	Given, Max  float64
	SentVersion int
	SentAt      time.Time
	Attempts    int // failed posts since the last success
	NextAt      time.Time
	LastError   string
	UpdatedAt   time.Time
}

func jsonList(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func listOf(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return v, nil
}

// SaveLTIPlatform adds a platform, or replaces the one with the same
// issuer and client id (keeping its creation time).
func (s *Store) SaveLTIPlatform(ctx context.Context, p LTIPlatform) error {
	now := classStampOf(s.now())
	_, err := s.db.ExecContext(ctx, `INSERT INTO lti_platforms (issuer, client_id, name, auth_url, token_url, jwks_url,
			token_audience, deployments, frame_origins, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (issuer, client_id) DO UPDATE SET name = excluded.name, auth_url = excluded.auth_url,
			token_url = excluded.token_url, jwks_url = excluded.jwks_url, token_audience = excluded.token_audience,
			deployments = excluded.deployments, frame_origins = excluded.frame_origins, updated_at = excluded.updated_at`,
		p.Issuer, p.ClientID, p.Name, p.AuthURL, p.TokenURL, p.JWKSURL, p.TokenAudience,
		jsonList(p.Deployments), jsonList(p.FrameOrigins), now, now)
	return err
}

// LTIPlatforms lists the stored platforms by issuer and client id.
func (s *Store) LTIPlatforms(ctx context.Context) ([]LTIPlatform, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT issuer, client_id, name, auth_url, token_url, jwks_url, token_audience,
		deployments, frame_origins, created_at, updated_at FROM lti_platforms ORDER BY issuer, client_id`)
	if err != nil {
		return nil, err
	}
	var out []LTIPlatform
	for rows.Next() {
		var p LTIPlatform
		var deps, origins, created, updated string
		if err := rows.Scan(&p.Issuer, &p.ClientID, &p.Name, &p.AuthURL, &p.TokenURL, &p.JWKSURL, &p.TokenAudience,
			&deps, &origins, &created, &updated); err != nil {
			rows.Close()
			return nil, err
		}
		if p.Deployments, err = listOf(deps); err == nil {
			p.FrameOrigins, err = listOf(origins)
		}
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("platform %s %s: %w", p.Issuer, p.ClientID, err)
		}
		p.CreatedAt, p.UpdatedAt = classTimeOf(created), classTimeOf(updated)
		out = append(out, p)
	}
	return out, closeRows(rows)
}

// DeleteLTIPlatform removes a platform; it reports whether there was one.
// What its launches left (learners, grades) stays.
func (s *Store) DeleteLTIPlatform(ctx context.Context, issuer, clientID string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM lti_platforms WHERE issuer = ? AND client_id = ?`, issuer, clientID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// AddLTIKey stores a new key and deletes all but the newest keep keys.
func (s *Store) AddLTIKey(ctx context.Context, k LTIKey, keep int) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO lti_keys (kid, private_pem, created_at, signs_from) VALUES (?, ?, ?, ?)`,
		k.ID, k.PrivatePEM, classStampOf(k.CreatedAt), classStampOf(k.SignsFrom)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM lti_keys WHERE kid NOT IN
		(SELECT kid FROM lti_keys ORDER BY created_at DESC, kid DESC LIMIT ?)`, keep); err != nil {
		return err
	}
	return tx.Commit()
}

// LTIKeys lists the tool's keys, newest first.
func (s *Store) LTIKeys(ctx context.Context) ([]LTIKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kid, private_pem, created_at, signs_from FROM lti_keys ORDER BY created_at DESC, kid DESC`)
	if err != nil {
		return nil, err
	}
	var out []LTIKey
	for rows.Next() {
		var k LTIKey
		var created, from string
		if err := rows.Scan(&k.ID, &k.PrivatePEM, &created, &from); err != nil {
			rows.Close()
			return nil, err
		}
		k.CreatedAt, k.SignsFrom = classTimeOf(created), classTimeOf(from)
		out = append(out, k)
	}
	return out, closeRows(rows)
}

// SaveLTILogin stores a login initiation, unless limit logins that have
// not expired are stored already (ErrLTILoginsFull), and first forgets
// the logins that expired: a launch after its login's expiry is refused
// whether its row is kept or not. The count and the insert are one
// statement; on Postgres, logins saved at the same moment by several
// replicas may pass the limit by as many as are saved at once.
func (s *Store) SaveLTILogin(ctx context.Context, l LTILogin, limit int) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM lti_logins WHERE expires_at < ?`, classStampOf(l.CreatedAt)); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO lti_logins (state_hash, nonce, issuer, client_id, created_at, expires_at)
		SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT COUNT(*) FROM lti_logins) < ?`,
		l.StateHash, l.Nonce, l.Issuer, l.ClientID, classStampOf(l.CreatedAt), classStampOf(l.ExpiresAt), limit)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		err = ErrLTILoginsFull
	}
	return err
}

// LTILogin reads the login with this state hash, or ErrNoLTILogin.
func (s *Store) LTILogin(ctx context.Context, stateHash string) (LTILogin, error) {
	l := LTILogin{StateHash: stateHash}
	var created, expires, used string
	err := s.db.QueryRowContext(ctx, `SELECT nonce, issuer, client_id, created_at, expires_at, used_at FROM lti_logins
		WHERE state_hash = ?`, stateHash).Scan(&l.Nonce, &l.Issuer, &l.ClientID, &created, &expires, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return l, ErrNoLTILogin
	}
	l.CreatedAt, l.ExpiresAt, l.UsedAt = classTimeOf(created), classTimeOf(expires), classTimeOf(used)
	return l, err
}

// UseLTILogin marks the login used; it reports false when it was used
// already (a replay), so at most one launch gets true.
func (s *Store) UseLTILogin(ctx context.Context, stateHash string, now time.Time) (bool, error) {
	return s.useOnce(ctx, `UPDATE lti_logins SET used_at = ? WHERE state_hash = ? AND used_at = ''`, now, stateHash)
}

func (s *Store) useOnce(ctx context.Context, query string, now time.Time, key string) (bool, error) {
	res, err := s.db.ExecContext(ctx, query, classStampOf(now), key)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// LTILearner returns the learner of a platform's user, creating the
// mapping with the id candidate the first time; it keeps name (the
// platform's name claim, "" when it sends none) and when they were last
// seen.
func (s *Store) LTILearner(ctx context.Context, issuer, subject, name, candidate string, now time.Time) (string, error) {
	if issuer == "" || subject == "" || candidate == "" {
		return "", errors.New("store: LTILearner needs an issuer, a subject and a candidate id")
	}
	at := classStampOf(now)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO lti_users (issuer, subject, learner, name, created_at, seen_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (issuer, subject) DO UPDATE SET name = excluded.name, seen_at = excluded.seen_at`,
		issuer, subject, candidate, name, at, at); err != nil {
		return "", err
	}
	var learner string
	err := s.db.QueryRowContext(ctx, `SELECT learner FROM lti_users WHERE issuer = ? AND subject = ?`, issuer, subject).Scan(&learner)
	return learner, err
}

// SaveLTISession stores a session under its token's hash, and forgets
// sessions that have expired.
func (s *Store) SaveLTISession(ctx context.Context, tokenHash string, ss LTISession) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM lti_sessions WHERE expires_at < ?`, classStampOf(ss.CreatedAt)); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO lti_sessions (token_hash, learner, issuer, client_id, deployment_id,
			context_id, context_title, instructor, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		tokenHash, ss.Learner, ss.Issuer, ss.ClientID, ss.Deployment, ss.ContextID, ss.ContextTitle, ss.Instructor,
		classStampOf(ss.CreatedAt), classStampOf(ss.ExpiresAt))
	return err
}

// LTISession reads the session with this token hash, or ErrNoLTISession.
// The caller checks ExpiresAt.
func (s *Store) LTISession(ctx context.Context, tokenHash string) (LTISession, error) {
	var ss LTISession
	var created, expires string
	err := s.db.QueryRowContext(ctx, `SELECT learner, issuer, client_id, deployment_id, context_id, context_title,
			instructor, created_at, expires_at FROM lti_sessions WHERE token_hash = ?`, tokenHash).
		Scan(&ss.Learner, &ss.Issuer, &ss.ClientID, &ss.Deployment, &ss.ContextID, &ss.ContextTitle, &ss.Instructor, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return ss, ErrNoLTISession
	}
	ss.CreatedAt, ss.ExpiresAt = classTimeOf(created), classTimeOf(expires)
	return ss, err
}

// SaveLTIDeepLink stores a deep linking request under its id's hash, and
// forgets requests that expired over an hour before it.
func (s *Store) SaveLTIDeepLink(ctx context.Context, idHash string, d LTIDeepLink) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM lti_deep_links WHERE expires_at < ?`, classStampOf(d.CreatedAt.Add(-time.Hour))); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO lti_deep_links (id_hash, issuer, client_id, deployment_id, return_url, data,
			multiple, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		idHash, d.Issuer, d.ClientID, d.Deployment, d.ReturnURL, d.Data, d.Multiple, classStampOf(d.CreatedAt), classStampOf(d.ExpiresAt))
	return err
}

// LTIDeepLink reads the request with this id hash, or ErrNoLTIDeepLink.
func (s *Store) LTIDeepLink(ctx context.Context, idHash string) (LTIDeepLink, error) {
	var d LTIDeepLink
	var created, expires, used string
	err := s.db.QueryRowContext(ctx, `SELECT issuer, client_id, deployment_id, return_url, data, multiple, created_at,
			expires_at, used_at FROM lti_deep_links WHERE id_hash = ?`, idHash).
		Scan(&d.Issuer, &d.ClientID, &d.Deployment, &d.ReturnURL, &d.Data, &d.Multiple, &created, &expires, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return d, ErrNoLTIDeepLink
	}
	d.CreatedAt, d.ExpiresAt, d.UsedAt = classTimeOf(created), classTimeOf(expires), classTimeOf(used)
	return d, err
}

// UseLTIDeepLink marks the request answered; false when it was already.
func (s *Store) UseLTIDeepLink(ctx context.Context, idHash string, now time.Time) (bool, error) {
	return s.useOnce(ctx, `UPDATE lti_deep_links SET used_at = ? WHERE id_hash = ? AND used_at = ''`, now, idHash)
}

// markPending is the SET clause that makes a grade row due: its version
// moves on; a failed row starts its attempts afresh; a row backing off
// after failed posts keeps its time, any other is due at ?now (the
// statement's first parameter). The stored values are named with the
// table's name, as Postgres needs in an upsert (where excluded's columns
// have the same names).
const markPending = `status = 'pending', version = lti_grades.version + 1,
	attempts = CASE WHEN lti_grades.status = 'failed' THEN 0 ELSE lti_grades.attempts END,
	next_at = CASE WHEN lti_grades.status = 'pending' AND lti_grades.attempts > 0 THEN lti_grades.next_at ELSE ?1 END,
	updated_at = ?1`

// SaveLTIGrade records a learner's graded placement at a launch (the link
// fields of g) and makes its score due: at once, unless earlier posts are
// backing off.
func (s *Store) SaveLTIGrade(ctx context.Context, g LTIGrade, now time.Time) error {
	at := classStampOf(now)
	_, err := s.db.ExecContext(ctx, `INSERT INTO lti_grades (issuer, client_id, resource_link, learner, deployment_id,
			subject, lesson, lineitem, context_id, context_title, link_title, status, next_at, updated_at)
		VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'pending', ?1, ?1)
		ON CONFLICT (issuer, client_id, resource_link, learner) DO UPDATE SET deployment_id = excluded.deployment_id,
			subject = excluded.subject, lesson = excluded.lesson, lineitem = excluded.lineitem,
			context_id = excluded.context_id, context_title = excluded.context_title, link_title = excluded.link_title, `+markPending,
		at, g.Issuer, g.ClientID, g.ResourceLink, g.Learner, g.Deployment, g.Subject, g.Lesson, g.LineItem,
		g.ContextID, g.ContextTitle, g.LinkTitle)
	return err
}

// MarkLTIGradesPending makes the scores of a learner's graded placements
// of a lesson due (every lesson when lesson is ""), and returns how many.
func (s *Store) MarkLTIGradesPending(ctx context.Context, learner, lesson string, now time.Time) (int, error) {
	q := `UPDATE lti_grades SET ` + markPending + ` WHERE learner = ?2`
	args := []any{classStampOf(now), learner}
	if lesson != "" {
		q += ` AND lesson = ?3`
		args = append(args, lesson)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

const gradeColumns = `g.issuer, g.client_id, g.resource_link, g.learner, g.deployment_id, g.subject, COALESCE(u.name, ''),
	g.lesson, g.lineitem, g.context_id, g.context_title, g.link_title, g.status, g.version, g.score_given, g.score_max,
	g.sent_version, g.sent_at, g.attempts, g.next_at, g.last_error, g.updated_at
	FROM lti_grades g LEFT JOIN lti_users u ON u.issuer = g.issuer AND u.subject = g.subject`

func scanGrades(rows *sql.Rows) ([]LTIGrade, error) {
	var out []LTIGrade
	for rows.Next() {
		var g LTIGrade
		var sent, next, updated string
		if err := rows.Scan(&g.Issuer, &g.ClientID, &g.ResourceLink, &g.Learner, &g.Deployment, &g.Subject, &g.Name,
			&g.Lesson, &g.LineItem, &g.ContextID, &g.ContextTitle, &g.LinkTitle, &g.Status, &g.Version, &g.Given, &g.Max,
			&g.SentVersion, &sent, &g.Attempts, &next, &g.LastError, &updated); err != nil {
			rows.Close()
			return nil, err
		}
		g.SentAt, g.NextAt, g.UpdatedAt = classTimeOf(sent), classTimeOf(next), classTimeOf(updated)
		out = append(out, g)
	}
	return out, closeRows(rows)
}

// DueLTIGrades lists up to limit pending grades due at now, the longest
// waiting first.
func (s *Store) DueLTIGrades(ctx context.Context, now time.Time, limit int) ([]LTIGrade, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+gradeColumns+` WHERE g.status = 'pending' AND g.next_at <= ?
		ORDER BY g.next_at LIMIT ?`, classStampOf(now), limit)
	if err != nil {
		return nil, err
	}
	return scanGrades(rows)
}

// NextLTIGradeDue returns when the next pending grade is due; false when
// none is pending.
func (s *Store) NextLTIGradeDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(next_at) FROM lti_grades WHERE status = 'pending'`).Scan(&next); err != nil {
		return time.Time{}, false, err
	}
	if !next.Valid || next.String == "" {
		return time.Time{}, false, nil
	}
	return classTimeOf(next.String), true, nil
}

// LTIGradeSent records that the platform took a score computed at
// version: the row is sent unless progress changed since (then it stays
// pending and is posted again).
func (s *Store) LTIGradeSent(ctx context.Context, g LTIGrade, version int, given, max float64, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE lti_grades SET score_given = ?, score_max = ?, sent_version = ?, sent_at = ?,
			attempts = 0, last_error = '', status = CASE WHEN version = ? THEN 'sent' ELSE status END, updated_at = ?
		WHERE issuer = ? AND client_id = ? AND resource_link = ? AND learner = ?`,
		given, max, version, classStampOf(now), version, classStampOf(now), g.Issuer, g.ClientID, g.ResourceLink, g.Learner)
	return err
}

// LTIGradeFailed records a failed post: one more attempt, the error, and
// the time of the next try; giveUp marks it failed instead.
func (s *Store) LTIGradeFailed(ctx context.Context, g LTIGrade, given, max float64, errText string, next time.Time, giveUp bool, now time.Time) error {
	status := GradePending
	if giveUp {
		status = GradeFailed
	}
	_, err := s.db.ExecContext(ctx, `UPDATE lti_grades SET score_given = ?, score_max = ?, attempts = attempts + 1,
			last_error = ?, next_at = ?, status = ?, updated_at = ?
		WHERE issuer = ? AND client_id = ? AND resource_link = ? AND learner = ?`,
		given, max, errText, classStampOf(next), status, classStampOf(now), g.Issuer, g.ClientID, g.ResourceLink, g.Learner)
	return err
}

// LTIGradeQuery selects grades: those of one learner, or those of one
// course (issuer, client id and context id).
type LTIGradeQuery struct {
	Learner                     string
	Issuer, ClientID, ContextID string
}

// LTIGrades lists the grades a query selects, by lesson and learner name.
func (s *Store) LTIGrades(ctx context.Context, q LTIGradeQuery) ([]LTIGrade, error) {
	where, args := `g.learner = ?`, []any{q.Learner}
	if q.Learner == "" {
		where, args = `g.issuer = ? AND g.client_id = ? AND g.context_id = ?`, []any{q.Issuer, q.ClientID, q.ContextID}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+gradeColumns+` WHERE `+where+`
		ORDER BY g.lesson, COALESCE(u.name, ''), g.subject, g.resource_link`, args...)
	if err != nil {
		return nil, err
	}
	return scanGrades(rows)
}

// RetryLTIGrades makes a course's failed grades pending again, due at now,
// and returns how many.
func (s *Store) RetryLTIGrades(ctx context.Context, issuer, clientID, contextID string, now time.Time) (int, error) {
	at := classStampOf(now)
	res, err := s.db.ExecContext(ctx, `UPDATE lti_grades SET status = 'pending', attempts = 0, next_at = ?, updated_at = ?
		WHERE status = 'failed' AND issuer = ? AND client_id = ? AND context_id = ?`, at, at, issuer, clientID, contextID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
