package lti

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"capacitylab/store"
)

// Defaults of Config.
const (
	// DefaultKeyRefetch is the shortest time between two fetches of one
	// platform's keys caused by a token signed with a key we do not know.
	DefaultKeyRefetch = 10 * time.Second
	// DefaultRetryBase is the wait after the first failed score post; each
	// further failure doubles it, up to DefaultRetryMax.
	DefaultRetryBase = 30 * time.Second
	// DefaultRetryMax caps the wait between two score posts.
	DefaultRetryMax = time.Hour
	// DefaultMaxAttempts is how many failed posts in a row make a grade
	// failed: with the waits above, about 15 hours of trying.
	DefaultMaxAttempts = 20
	// DefaultMaxLogins bounds the login initiations stored and waiting
	// for their launches (each waits loginLife, 10 minutes): about 200
	// bytes a row, 10 MB in all. Past it a login is refused with
	// store.ErrLTILoginsFull until some expire. A whole school's launches
	// in ten minutes fit many times over; what one client address may
	// start is bounded apart (package web), well below it.
	DefaultMaxLogins = 50_000
	// httpTimeout bounds each call to a platform.
	httpTimeout = 10 * time.Second
	// platformsTTL is how long the list of platforms is kept before it is
	// read again (platforms added by `server lti add` while the server runs
	// are found at once by a login that names them).
	platformsTTL = 30 * time.Second
)

// Store is the storage the tool needs; *store.Store implements it.
type Store interface {
	LTIPlatforms(ctx context.Context) ([]store.LTIPlatform, error)
	AddLTIKey(ctx context.Context, k store.LTIKey, keep int) error
	LTIKeys(ctx context.Context) ([]store.LTIKey, error)
	SaveLTILogin(ctx context.Context, l store.LTILogin, limit int) error
	LTILogin(ctx context.Context, stateHash string) (store.LTILogin, error)
	UseLTILogin(ctx context.Context, stateHash string, now time.Time) (bool, error)
	LTILearner(ctx context.Context, issuer, subject, name, candidate string, now time.Time) (string, error)
	SaveLTISession(ctx context.Context, tokenHash string, s store.LTISession) error
	LTISession(ctx context.Context, tokenHash string) (store.LTISession, error)
	SaveLTIDeepLink(ctx context.Context, idHash string, d store.LTIDeepLink) error
	LTIDeepLink(ctx context.Context, idHash string) (store.LTIDeepLink, error)
	UseLTIDeepLink(ctx context.Context, idHash string, now time.Time) (bool, error)
	SaveLTIGrade(ctx context.Context, g store.LTIGrade, now time.Time) error
	MarkLTIGradesPending(ctx context.Context, learner, lesson string, now time.Time) (int, error)
	DueLTIGrades(ctx context.Context, now time.Time, limit int) ([]store.LTIGrade, error)
	NextLTIGradeDue(ctx context.Context) (time.Time, bool, error)
	LTIGradeSent(ctx context.Context, g store.LTIGrade, version int, given, max float64, now time.Time) error
	LTIGradeFailed(ctx context.Context, g store.LTIGrade, given, max float64, errText string, next time.Time, giveUp bool, now time.Time) error
	LTIGrades(ctx context.Context, q store.LTIGradeQuery) ([]store.LTIGrade, error)
	RetryLTIGrades(ctx context.Context, issuer, clientID, contextID string, now time.Time) (int, error)
}

// Score is a learner's score in one lesson, as posted to a line item.
type Score struct {
	Given, Max float64
	Completed  bool   // everything that counts is done
	Comment    string // shown to the learner by some platforms
}

// ScoreFunc computes a learner's score in a lesson now.
type ScoreFunc func(ctx context.Context, learner, lesson string) (Score, error)

// Config configures a Tool. Store is required.
type Config struct {
	Store Store
	// Platforms come from the platforms file; they are kept in memory and
	// replace stored ones with the same issuer and client id.
	Platforms []Platform
	// Score computes the score posted for a graded placement; nil: no
	// scores are posted (grades stay pending).
	Score       ScoreFunc
	HTTPClient  *http.Client // calls to platforms; default: a client with a 10 s timeout
	Logger      *slog.Logger // default: discard
	Now         func() time.Time
	KeyRefetch  time.Duration // DefaultKeyRefetch
	RetryBase   time.Duration // DefaultRetryBase
	RetryMax    time.Duration // DefaultRetryMax
	MaxAttempts int           // DefaultMaxAttempts
	MaxLogins   int           // DefaultMaxLogins
}

// Tool is the tool side of LTI 1.3: login initiation, launch validation,
// sessions, deep linking responses, the tool's keys, and the posting of
// scores (a goroutine started by New, stopped by Close).
type Tool struct {
	store       Store
	file        []Platform
	score       ScoreFunc
	hc          *http.Client
	log         *slog.Logger
	now         func() time.Time
	retryBase   time.Duration
	retryMax    time.Duration
	maxAttempts int
	maxLogins   int // logins stored at once (DefaultMaxLogins)

	platMu  sync.Mutex
	plats   []Platform // file and store, file first wins
	platsAt time.Time  // when plats was read; zero: never
	frame   string     // the platforms' frame origins, space-separated

	keys     *keyCache // platforms' public keys
	ownMu    sync.Mutex
	ownKeys  map[string]*toolKey // our keys parsed, by kid
	tokens   tokenCache
	sessions sessionCache

	wake chan struct{}
	stop context.CancelFunc
	done chan struct{}
}

// New makes a Tool and starts its score poster.
func New(cfg Config) (*Tool, error) {
	if cfg.Store == nil {
		return nil, errors.New("lti: Config.Store is nil")
	}
	for _, p := range cfg.Platforms {
		if err := CheckPlatform(p); err != nil {
			return nil, err
		}
	}
	t := &Tool{store: cfg.Store, file: cfg.Platforms, score: cfg.Score, hc: cfg.HTTPClient, log: cfg.Logger, now: cfg.Now,
		retryBase: cfg.RetryBase, retryMax: cfg.RetryMax, maxAttempts: cfg.MaxAttempts, maxLogins: cmp.Or(max(cfg.MaxLogins, 0), DefaultMaxLogins),
		ownKeys: map[string]*toolKey{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if t.hc == nil {
		t.hc = &http.Client{Timeout: httpTimeout}
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.retryBase <= 0 {
		t.retryBase = DefaultRetryBase
	}
	if t.retryMax <= 0 {
		t.retryMax = DefaultRetryMax
	}
	if t.maxAttempts <= 0 {
		t.maxAttempts = DefaultMaxAttempts
	}
	refetch := cfg.KeyRefetch
	if refetch <= 0 {
		refetch = DefaultKeyRefetch
	}
	t.keys = &keyCache{hc: t.hc, now: t.now, refetch: refetch}
	ctx, cancel := context.WithCancel(context.Background())
	t.stop = cancel
	go t.post(ctx)
	return t, nil
}

// Close stops the score poster; pending scores stay stored and are posted
// by the next Tool on the same store.
func (t *Tool) Close() {
	t.stop()
	<-t.done
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hashOf is the SHA-256 of a secret in hex: what the store keeps of it.
func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
