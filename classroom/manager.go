package classroom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"capacitylab/store"
	"capacitylab/wsconn"
)

// Limits and defaults.
const (
	// DefaultIdle is how long a session may go without any activity (a
	// join, a connection or an accepted message) before it ends.
	DefaultIdle = 3 * time.Hour
	// DefaultSendBuffer is how many messages may wait for one slow client
	// before it is dropped.
	DefaultSendBuffer = 256
	// MaxRounds is how many rounds of voting a question may have.
	MaxRounds = 2
	// MaxParticipants caps a session's participants.
	MaxParticipants = 1000
	// MaxNameRunes caps a display name.
	MaxNameRunes = 40
	// logSize is how many broadcast messages a session keeps for resuming
	// clients.
	logSize = 512
	// storeTimeout bounds every store call made for a message.
	storeTimeout = 5 * time.Second
	// DefaultPresenceEvery is how often a server sharing its sessions
	// renews the presence of the participants connected to it (and
	// clears that of servers silent for presenceLostAfter of these).
	DefaultPresenceEvery = 5 * time.Second
	// presenceLostAfter: a server whose presence heartbeat is this many
	// periods old has stopped; its participants are no longer counted
	// connected.
	presenceLostAfter = 3
)

// Errors returned by Manager and Session methods.
var (
	// ErrNoSession: no session has that code.
	ErrNoSession = errors.New("there is no class session with that code")
	// ErrBadCode: what was typed cannot be a join code.
	ErrBadCode = errors.New(codeHelp)
	// ErrEnded: the session has ended; its results can still be read.
	ErrEnded = errors.New("this class session has ended")
	// ErrFull: the session has MaxParticipants participants.
	ErrFull = errors.New("this class session is full")
	// ErrBadToken: a token is neither the session's host token nor its
	// projector token.
	ErrBadToken = errors.New("that token is neither this session's host token nor its projector token")
	// ErrNotParticipant: a participant token is not one of the session's.
	ErrNotParticipant = errors.New("not a participant of this session")
)

// TooManyMissesError is returned by Lookup when the client address asked
// for too many codes that do not exist.
type TooManyMissesError struct {
	RetryAfter time.Duration
}

func (e *TooManyMissesError) Error() string {
	return fmt.Sprintf("too many wrong join codes from this address; try again in %d seconds", int(e.RetryAfter.Seconds()+0.999))
}

// Question is a poll the host can run: one Predict or Check block.
type Question struct {
	ID      string
	Type    string   // "predict" or "check"
	Text    string   // the prompt as plain text: messages name the question by its first words
	Options []string // option ids in order
	Correct string   // the correct option id; shown to hosts, and to everyone once the answer is shown
	// Explain is each option's explanation from the lesson (HTML, by
	// option id), sent to everyone with the answer.
	Explain map[string]string
	// OptionText is each option's words as plain text, by option id,
	// for the results' CSVs.
	OptionText map[string]string
	// Order returns the option ids in the order a class with join code
	// key sees them, every screen the same (the pages letter them A, B,
	// C… in that order); nil: the order of Options.
	Order func(key string) []string
}

// shown returns q's option ids in the order a class with join code key
// sees them (see Question.Order).
func (q *Question) shown(key string) []string {
	if q.Order == nil {
		return q.Options
	}
	return q.Order(key)
}

// OptionLetter is the letter of the option at place i (from 0) of a
// question as shown: A, B, … Z, then AA, AB, ….
func OptionLetter(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return OptionLetter(i/26-1) + OptionLetter(i%26)
}

// labelRunes is how much of a question's text its label keeps.
const labelRunes = 48

// label is how a message names a question: the first words of its
// prompt in quotes, as the class sees it ("‘With one worker and 20 ms
// per…’"), or its id when the lesson gave no text.
func (q *Question) label() string {
	t := strings.Join(strings.Fields(q.Text), " ")
	if t == "" {
		return q.ID
	}
	if r := []rune(t); len(r) > labelRunes {
		cut := string(r[:labelRunes])
		if i := strings.LastIndexByte(cut, ' '); i > labelRunes/2 {
			cut = cut[:i]
		}
		t = strings.TrimRight(cut, " ,;:.") + "…"
	}
	return "‘" + t + "’"
}

// Lesson is what a session needs to know about its lesson.
type Lesson struct {
	Slug      string
	Title     string
	Questions []Question
	Labs      []string // ids of the lab blocks the host may run
}

// LessonFunc returns the lesson with a slug, or an error if there is none.
type LessonFunc func(slug string) (Lesson, error)

// RunFunc starts one run of a lesson's lab preset (with the host's knobs,
// if any) for a whole session and returns the run's id. addr is the
// client address of the host who asked: the run counts against that
// address's share of the queue, as a learner's own run does, and against
// the session's own (one run at a time). The text of its error is shown
// to the host, so it must be written for them.
type RunFunc func(ctx context.Context, session, lesson, lab, addr string, knobs *Knobs) (runID string, err error)

// CancelFunc cancels run runID of session, waiting or running. It returns
// ErrRunOver when the run has already ended (or is not known); a Refusal's
// text goes to the host as it is.
type CancelFunc func(ctx context.Context, session, runID string) error

// ErrRunOver is CancelFunc's answer for a run that has already ended.
var ErrRunOver = errors.New("the class run has already ended")

// Store is the storage sessions are kept in; *store.Store implements it.
type Store interface {
	CreateClassSession(ctx context.Context, c store.ClassSession) error
	ClassSession(ctx context.Context, code string) (store.ClassSession, error)
	AddClassParticipant(ctx context.Context, code string, p store.ClassParticipant) error
	SaveClassRound(ctx context.Context, code string, r store.ClassRound) error
	SaveClassVotes(ctx context.Context, code string, votes []store.ClassVote) error
	UpdateClassSession(ctx context.Context, code, focus, runID string, activeAt time.Time) error
	EndClassSession(ctx context.Context, code string, at time.Time) error
	EndIdleClassSessions(ctx context.Context, idleBefore, at time.Time) ([]string, error)
	TouchClassSession(ctx context.Context, code string, activeAt time.Time) error
	ClassSessionHead(ctx context.Context, code string, afterParticipant int) (store.ClassSession, error)
	ClassRoundVotes(ctx context.Context, code, question string, round int) ([]store.ClassVote, error)
	// SharedClasses reports whether other servers change the same
	// sessions (Postgres); then every session in memory follows the
	// store through WatchClass (follow.go).
	SharedClasses() bool
	WatchClass(code string) *store.Watch
	WatchClassPresence(code string) *store.Watch
	// Presence across servers (presence.go), when SharedClasses.
	SetClassPresence(ctx context.Context, code, server string, participant int, here bool) error
	HeartbeatClassPresence(ctx context.Context, server string) error
	ExpireClassPresence(ctx context.Context, lost time.Duration) ([]string, error)
	ForgetClassPresence(ctx context.Context, server string) error
	ClassPresent(ctx context.Context, code, except string, lost time.Duration) ([]int, error)
}

// Config configures a Manager. Store and Lessons are required.
type Config struct {
	Store    Store
	Lessons  LessonFunc
	StartRun RunFunc // nil: the host's run requests are refused
	// CancelRun cancels a session's run: the host's cancel, and the end
	// of a session (the host's or an idle one's) whose run still waits
	// or runs. nil: the host's cancels are refused.
	CancelRun  CancelFunc
	Idle       time.Duration // 0: DefaultIdle
	SendBuffer int           // 0: DefaultSendBuffer
	// SweepEvery is how often idle sessions are looked for; 0: a quarter
	// of Idle, at most a minute.
	SweepEvery time.Duration
	// PresenceEvery is how often a server sharing its sessions renews the
	// presence of its participants (presence.go); 0: DefaultPresenceEvery.
	PresenceEvery time.Duration
	Now           func() time.Time // nil: time.Now
	Logger        *slog.Logger     // nil: discard
}

// Manager holds the live sessions: each one's state, participants and
// connections. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	misses *Limiter
	// server names this Manager among the servers sharing the store, in
	// the presence it stores (presence.go).
	server string

	mu     sync.Mutex
	live   map[string]*Session
	closed bool
	conns  sync.WaitGroup
	stop   chan struct{}
	swept  chan struct{}
	beaten chan struct{} // closed when the presence loop has ended

	followers sync.WaitGroup // the sessions' followers (follow.go)

	votes   chan voteOp   // to the vote writer (writer.go)
	written chan struct{} // closed when the vote writer has ended
}

// New starts a Manager; Close stops it.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Lessons == nil {
		return nil, errors.New("classroom: Config needs Store and Lessons")
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = DefaultSendBuffer
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = min(cfg.Idle/4, time.Minute)
	}
	if cfg.PresenceEvery <= 0 {
		cfg.PresenceEvery = DefaultPresenceEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: log, misses: newMissLimiter(), server: newParticipantToken()[:16], live: map[string]*Session{},
		stop: make(chan struct{}), swept: make(chan struct{}), beaten: make(chan struct{}), votes: make(chan voteOp, maxBatch), written: make(chan struct{})}
	go m.janitor()
	go m.presenceLoop()
	go m.voteWriter()
	return m, nil
}

// Idle returns the idle time after which sessions end.
func (m *Manager) Idle() time.Duration { return m.cfg.Idle }

// Close ends every connection (wsconn.CloseGoingAway) and stops the idle sweeps.
// Sessions stay stored and resume when the server starts again.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	for _, s := range m.live {
		s.mu.Lock()
		s.flushActive()
		for c := range s.conns {
			c.kick(wsconn.CloseGoingAway, "server stopping")
		}
		s.mu.Unlock()
		s.stopFollowing()
	}
	m.mu.Unlock()
	<-m.swept
	<-m.beaten
	m.conns.Wait()
	m.forgetPresence()
	m.followers.Wait()
	close(m.votes)
	select {
	case <-m.written:
	case <-time.After(writerIdle):
		m.log.Error("class vote writer did not finish")
	}
	return nil
}

// Create starts a session for the lesson with this slug and returns it
// with the host token (shown once, in the host link; only its hash is
// stored).
func (m *Manager) Create(ctx context.Context, slug string) (*Session, string, error) {
	info, err := m.cfg.Lessons(slug)
	if err != nil {
		return nil, "", err
	}
	token := newHostToken()
	now := m.cfg.Now().UTC()
	for range 8 {
		c := store.ClassSession{Code: newCode(), Lesson: slug, HostHash: hashToken(token), CreatedAt: now, ActiveAt: now}
		err = m.cfg.Store.CreateClassSession(ctx, c)
		if errors.Is(err, store.ErrCodeTaken) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		s := m.newSession(c, info)
		m.mu.Lock()
		m.live[c.Code] = s
		m.follow(s)
		m.mu.Unlock()
		return s, token, nil
	}
	return nil, "", fmt.Errorf("classroom: no free join code after 8 tries: %w", err)
}

// Lookup finds the session for what a learner typed or followed, counting
// codes that are malformed or do not exist against the client address
// addr. It returns
// ErrBadCode, ErrNoSession or *TooManyMissesError when it cannot; an
// ended session is returned (check Ended).
func (m *Manager) Lookup(ctx context.Context, addr, typed string) (*Session, error) {
	now := m.cfg.Now()
	if wait := m.misses.Wait(addr, now); wait > 0 {
		return nil, &TooManyMissesError{RetryAfter: wait}
	}
	code, ok := NormalizeCode(typed)
	if !ok {
		// Not a miss: what cannot be a code tells a guesser nothing, and
		// counting typos would lock a class out sooner.
		return nil, ErrBadCode
	}
	s, err := m.Get(ctx, code)
	if errors.Is(err, ErrNoSession) {
		m.misses.Take(addr, now)
	}
	return s, err
}

// Get returns the session with this exact code, loading it from the store
// if it is not in memory (after a restart). It does not count misses; use
// it only behind a host token or a participant's cookie check.
func (m *Manager) Get(ctx context.Context, code string) (*Session, error) {
	m.mu.Lock()
	s := m.live[code]
	m.mu.Unlock()
	if s != nil {
		return s, nil
	}
	// The store is read without the lock, so that a code missing (a
	// guess, a typo) never holds up look-ups of live sessions.
	c, err := m.cfg.Store.ClassSession(ctx, code)
	if errors.Is(err, store.ErrNoSession) {
		return nil, ErrNoSession
	}
	if err != nil {
		return nil, err
	}
	info, err := m.cfg.Lessons(c.Lesson)
	if err != nil {
		// The lesson is gone from the course: keep what was stored
		// readable, with no questions to run.
		info = Lesson{Slug: c.Lesson}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.live[code]; s != nil {
		return s, nil // loaded meanwhile by another look-up
	}
	s = m.newSession(c, info)
	m.live[code] = s
	m.follow(s)
	return s, nil
}

func (m *Manager) newSession(c store.ClassSession, info Lesson) *Session {
	s := &Session{m: m, code: c.Code, lesson: c.Lesson, hostHash: c.HostHash, epoch: newParticipantToken()[:12],
		info: info, questions: map[string]*question{}, byToken: map[string]*participant{},
		focus: c.Focus, shown: c.Focus, runID: c.RunID, ended: c.Ended(), activeAt: c.ActiveAt, savedActive: c.ActiveAt,
		createdAt: c.CreatedAt, conns: map[*conn]struct{}{}, pending: map[voteKey]int{}}
	for _, q := range info.Questions {
		s.questions[q.ID] = &question{Question: q}
	}
	for _, p := range c.Participants {
		pp := &participant{ClassParticipant: p}
		s.participants = append(s.participants, pp)
		s.byToken[p.TokenHash] = pp
	}
	for _, r := range c.Rounds {
		if q := s.questions[r.Question]; q != nil && r.Round == len(q.rounds)+1 {
			// ClassSession reads the votes after the rounds, so a round
			// read as closed came with all its votes (follow.go).
			q.rounds = append(q.rounds, &round{ClassRound: r, votes: map[int]string{}, votesFinal: r.Status != store.RoundOpen})
		}
	}
	for _, v := range c.Votes {
		if q := s.questions[v.Question]; q != nil && v.Round >= 1 && v.Round <= len(q.rounds) {
			q.rounds[v.Round-1].votes[v.Participant] = v.Option
		}
	}
	return s
}

// janitor ends idle sessions every SweepEvery and forgets ended sessions
// nobody is connected to.
func (m *Manager) janitor() {
	defer close(m.swept)
	t := time.NewTicker(m.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.Sweep(context.Background())
		}
	}
}

// Sweep ends every session idle for longer than Config.Idle, in memory and
// in the store. The janitor calls it; tests may too.
func (m *Manager) Sweep(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.live {
		s.mu.Lock()
		s.flushActive()
		s.mu.Unlock()
	}
	now := m.cfg.Now().UTC()
	codes, err := m.cfg.Store.EndIdleClassSessions(ctx, now.Add(-m.cfg.Idle), now)
	if err != nil {
		m.log.Error("ending idle class sessions", "err", err)
		return
	}
	for _, code := range codes {
		runID := ""
		if s := m.live[code]; s != nil {
			s.mu.Lock()
			runID = s.runID
			s.endLocked(false)
			s.mu.Unlock()
		} else if c, err := m.cfg.Store.ClassSessionHead(ctx, code, MaxParticipants); err == nil {
			runID = c.RunID
		}
		// This server ended it (the store returns each code to one
		// server), so this server cancels its run.
		m.cancelEnded(code, runID)
		m.log.Info("class session ended after idle time", "session", code, "idle", m.cfg.Idle.String())
	}
	for code, s := range m.live {
		s.mu.Lock()
		gone := s.ended && len(s.conns) == 0
		s.mu.Unlock()
		if gone {
			delete(m.live, code)
			s.stopFollowing()
		}
	}
}
