package classroom

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"capacitylab/store"
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

// NameError says what is wrong with a display name.
type NameError struct{ Reason string }

func (e *NameError) Error() string { return "display name " + e.Reason }

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
// if any) for a whole session and returns the run's id. The text of its error is shown to the host, so it
// must be written for them.
type RunFunc func(ctx context.Context, session, lesson, lab string, knobs *Knobs) (runID string, err error)

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
}

// Config configures a Manager. Store and Lessons are required.
type Config struct {
	Store      Store
	Lessons    LessonFunc
	StartRun   RunFunc       // nil: the host's run requests are refused
	Idle       time.Duration // 0: DefaultIdle
	SendBuffer int           // 0: DefaultSendBuffer
	// SweepEvery is how often idle sessions are looked for; 0: a quarter
	// of Idle, at most a minute.
	SweepEvery time.Duration
	Now        func() time.Time // nil: time.Now
	Logger     *slog.Logger     // nil: discard
}

// Manager holds the live sessions: each one's state, participants and
// connections. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	misses *Limiter

	mu     sync.Mutex
	live   map[string]*Session
	closed bool
	conns  sync.WaitGroup
	stop   chan struct{}
	swept  chan struct{}

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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: log, misses: newMissLimiter(), live: map[string]*Session{},
		stop: make(chan struct{}), swept: make(chan struct{}), votes: make(chan voteOp, maxBatch), written: make(chan struct{})}
	go m.janitor()
	go m.voteWriter()
	return m, nil
}

// Idle returns the idle time after which sessions end.
func (m *Manager) Idle() time.Duration { return m.cfg.Idle }

// Close ends every connection (close code 1001) and stops the idle sweeps.
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
			c.kick(1001, "server stopping")
		}
		s.mu.Unlock()
	}
	m.mu.Unlock()
	<-m.swept
	m.conns.Wait()
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
	return s, nil
}

func (m *Manager) newSession(c store.ClassSession, info Lesson) *Session {
	s := &Session{m: m, code: c.Code, lesson: c.Lesson, hostHash: c.HostHash, epoch: newParticipantToken()[:12],
		info: info, questions: map[string]*question{}, byToken: map[string]*participant{},
		focus: c.Focus, runID: c.RunID, ended: c.Ended(), activeAt: c.ActiveAt, savedActive: c.ActiveAt,
		createdAt: c.CreatedAt, conns: map[*conn]struct{}{}}
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
			q.rounds = append(q.rounds, &round{ClassRound: r, votes: map[int]string{}})
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
		if s := m.live[code]; s != nil {
			s.mu.Lock()
			s.endLocked(false)
			s.mu.Unlock()
		}
		m.log.Info("class session ended after idle time", "session", code, "idle", m.cfg.Idle.String())
	}
	for code, s := range m.live {
		s.mu.Lock()
		if s.ended && len(s.conns) == 0 {
			delete(m.live, code)
		}
		s.mu.Unlock()
	}
}

// Session is one class: its participants, each question's rounds and
// votes, and the connections of its host(s) and participants.
type Session struct {
	m                      *Manager
	code, lesson, hostHash string
	epoch                  string
	info                   Lesson
	createdAt              time.Time

	mu           sync.Mutex
	questions    map[string]*question
	participants []*participant // index id-1
	byToken      map[string]*participant
	focus, runID string
	ended        bool
	activeAt     time.Time
	savedActive  time.Time
	seq          int
	log          []logEntry
	conns        map[*conn]struct{}
}

type participant struct {
	store.ClassParticipant
	conns int
}

func (p *participant) view() *ParticipantView {
	return &ParticipantView{ID: p.ID, Name: p.Name, Connected: p.conns > 0}
}

type question struct {
	Question
	rounds []*round
}

func (q *question) last() *round {
	if len(q.rounds) == 0 {
		return nil
	}
	return q.rounds[len(q.rounds)-1]
}

// answered reports whether the host has shown the question's answer.
func (q *question) answered() bool {
	r := q.last()
	return r != nil && !r.AnsweredAt.IsZero()
}

type round struct {
	store.ClassRound
	votes map[int]string // participant id → option
}

type logEntry struct {
	seq       int
	hostsOnly bool
	data      []byte
	screen    []byte // what projectors get of a hosts-only message; nil: nothing
}

// dataFor is what a connection of role gets of the message: all of it,
// the projector's part of a hosts-only one, or nil.
func (e logEntry) dataFor(role string) []byte {
	switch {
	case !e.hostsOnly || role == RoleHost:
		return e.data
	case role == RoleProjector:
		return e.screen
	}
	return nil
}

// screenView is what a projector may see of a hosts-only message: how many
// are connected, how many have voted; never who, nor the counts before
// the reveal.
func screenView(o Out) (Out, bool) {
	switch o.Kind {
	case KindPresence:
		return Out{Seq: o.Seq, Kind: o.Kind, Connected: o.Connected}, true
	case KindTally:
		return Out{Seq: o.Seq, Kind: o.Kind, Question: o.Question, Round: o.Round, Total: o.Total}, true
	}
	return Out{}, false
}

// Code returns the session's join code.
func (s *Session) Code() string { return s.code }

// Lesson returns the slug of the session's lesson.
func (s *Session) Lesson() string { return s.lesson }

// Info returns what the session knows of its lesson.
func (s *Session) Info() Lesson { return s.info }

// CreatedAt returns when the session was created.
func (s *Session) CreatedAt() time.Time { return s.createdAt }

// Ended reports whether the session has ended.
func (s *Session) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// IsHost reports whether token is the session's host token.
func (s *Session) IsHost(token string) bool { return sameHash(token, s.hostHash) }

// ProjectorToken returns the token of the session's projector view, which
// may watch but do nothing (see RoleProjector). It is derived from the
// host token's stored hash, so it survives a restart and never reveals
// the host token.
func (s *Session) ProjectorToken() string { return projectorToken(s.hostHash) }

// JoinKey returns the key the session's join link carries (see joinKey).
func (s *Session) JoinKey() string { return joinKey(s.hostHash) }

// IsJoinKey reports whether key is the session's join key.
func (s *Session) IsJoinKey(key string) bool {
	return key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.JoinKey())) == 1
}

// IsProjector reports whether token is the session's projector token.
func (s *Session) IsProjector(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.ProjectorToken())) == 1
}

// Holder returns who a connection's credentials make it: the host or the
// projector when token (from ?token=) is set, else the participant whose
// token participant is. It fails with ErrBadToken or ErrNotParticipant.
func (s *Session) Holder(token, participant string) (Who, error) {
	switch {
	case token == "":
		id, _, ok := s.Participant(participant)
		if !ok {
			return Who{}, ErrNotParticipant
		}
		return Who{Participant: id}, nil
	case s.IsHost(token):
		return Who{Host: true}, nil
	case s.IsProjector(token):
		return Who{Projector: true}, nil
	}
	return Who{}, ErrBadToken
}

// Participant returns the id and name of the participant holding token.
func (s *Session) Participant(token string) (id int, name string, ok bool) {
	if token == "" {
		return 0, "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byToken[hashToken(token)]
	if p == nil {
		return 0, "", false
	}
	return p.ID, p.Name, true
}

// Display names are shown in the host's list and the results, so a name
// must not be able to pass for another or hide.
const (
	// maxMarks is how many combining marks (accents, vowel signs) may sit
	// on one character once the name is composed (NFC): scripts need a
	// few, stacks of dozens draw over the lines around them.
	maxMarks = 4
	// nameAllowed says what a name may hold, in every refusal.
	nameAllowed = "use letters, digits, spaces and punctuation"
)

// CheckName trims a display name, composes it (Unicode NFC, so "é" typed
// as e and an accent is the same name as "é") and checks it: at most
// MaxNameRunes characters, no control characters, no characters that
// change the text's direction (bidirectional embeddings, overrides and
// isolates, and the direction marks), no zero-width or other invisible
// format characters but the joiners scripts and emoji need (ZWJ, ZWNJ,
// and emoji tag characters), at most maxMarks combining marks on one
// character, and at least one visible character (a letter, digit,
// punctuation or symbol that is not a blank filler such as U+3164).
// Empty is allowed: the participant is shown by number.
func CheckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if !utf8.ValidString(name) {
		return "", &NameError{"is not valid UTF-8 text"}
	}
	name = norm.NFC.String(name)
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return "", &NameError{fmt.Sprintf("is %d characters long; at most %d are allowed", n, MaxNameRunes)}
	}
	if name == "" {
		return "", nil
	}
	visible, marks := false, 0
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "", &NameError{"contains control characters; " + nameAllowed}
		case unicode.Is(unicode.Bidi_Control, r):
			return "", &NameError{"contains characters that change the text's direction, which can make it read as another name; " + nameAllowed}
		}
		if unicode.In(r, unicode.Mn, unicode.Me) {
			if marks++; marks > maxMarks {
				return "", &NameError{fmt.Sprintf("stacks more than %d accents or other marks on one character; %s", maxMarks, nameAllowed)}
			}
			continue
		}
		marks = 0
		if visibleRune(r) {
			visible = true
		}
	}
	if !visible {
		return "", &NameError{"has no visible character; " + nameAllowed + ", or leave it empty to be shown by number"}
	}
	for _, r := range name {
		if unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d' && !(r >= 0xE0020 && r <= 0xE007F) {
			return "", &NameError{fmt.Sprintf("contains an invisible character (U+%04X); %s", r, nameAllowed)}
		}
	}
	return name, nil
}

// visibleRune reports whether r draws something: a letter, digit,
// punctuation or symbol that is not one of the fillers that render blank
// (Unicode's Other_Default_Ignorable_Code_Point, such as the Hangul
// fillers, and the blank braille pattern).
func visibleRune(r rune) bool {
	if !unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) {
		return false
	}
	return !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) && r != '\u2800'
}

// Join adds a participant with an optional display name and returns their
// id and token (the token goes in the participant's cookie; only its hash
// is stored).
func (s *Session) Join(ctx context.Context, name string) (id int, token string, err error) {
	name, err = CheckName(name)
	if err != nil {
		return 0, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return 0, "", ErrEnded
	}
	if len(s.participants) >= MaxParticipants {
		return 0, "", ErrFull
	}
	token = newParticipantToken()
	p := &participant{ClassParticipant: store.ClassParticipant{ID: len(s.participants) + 1, TokenHash: hashToken(token),
		Name: name, JoinedAt: s.m.cfg.Now().UTC()}}
	if err := s.m.cfg.Store.AddClassParticipant(ctx, s.code, p.ClassParticipant); err != nil {
		return 0, "", err
	}
	s.participants = append(s.participants, p)
	s.byToken[p.TokenHash] = p
	s.touch()
	s.broadcast(Out{Kind: KindPresence, Participant: p.view(), Connected: s.connected()}, true)
	return p.ID, token, nil
}

func (s *Session) touch() { s.activeAt = s.m.cfg.Now().UTC() }

// flushActive stores the last activity time if it changed.
func (s *Session) flushActive() {
	if !s.activeAt.After(s.savedActive) || s.ended {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.m.cfg.Store.UpdateClassSession(ctx, s.code, s.focus, s.runID, s.activeAt); err != nil {
		s.m.log.Error("saving class session activity", "session", s.code, "err", err)
		return
	}
	s.savedActive = s.activeAt
}

func (s *Session) connected() int {
	n := 0
	for _, p := range s.participants {
		if p.conns > 0 {
			n++
		}
	}
	return n
}

// broadcast numbers a message and sends it to every connection (or only
// the hosts', projectors getting their screenView of it), keeping it for
// clients that resume. s.mu is held.
func (s *Session) broadcast(o Out, hostsOnly bool) {
	s.seq++
	o.Seq = s.seq
	e := logEntry{seq: s.seq, hostsOnly: hostsOnly}
	var err error
	if e.data, err = json.Marshal(o); err != nil {
		s.m.log.Error("encoding class message", "err", err)
		return
	}
	if lite, ok := screenView(o); ok && hostsOnly {
		if e.screen, err = json.Marshal(lite); err != nil {
			s.m.log.Error("encoding class message", "err", err)
			return
		}
	}
	s.log = append(s.log, e)
	if len(s.log) > logSize {
		s.log = slices.Delete(s.log, 0, len(s.log)-logSize)
	}
	for c := range s.conns {
		if d := e.dataFor(c.role); d != nil {
			c.enqueue(d)
		}
	}
}

// reply sends a message to one connection only. s.mu is held.
func (s *Session) reply(c *conn, o Out) {
	o.Seq = s.seq
	data, err := json.Marshal(o)
	if err != nil {
		s.m.log.Error("encoding class message", "err", err)
		return
	}
	c.enqueue(data)
}

func (s *Session) refuse(c *conn, ref int, code, msg string) {
	s.reply(c, Out{Kind: KindError, Ref: ref, Code: code, Message: msg})
}

// endLocked ends the session: stored, told to everyone, connections
// closed once the message is written. s.mu is held.
func (s *Session) endLocked(save bool) {
	if s.ended {
		return
	}
	s.ended = true
	if save {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if err := s.m.cfg.Store.EndClassSession(ctx, s.code, s.m.cfg.Now().UTC()); err != nil {
			s.m.log.Error("ending class session", "session", s.code, "err", err)
		}
	}
	s.broadcast(Out{Kind: KindEnded}, false)
	for c := range s.conns {
		c.kick(1000, "session ended")
	}
}

func (s *Session) counts(q *question, r *round) []OptionCount {
	out := make([]OptionCount, len(q.Options))
	for i, o := range q.Options {
		out[i].Option = o
	}
	for _, v := range r.votes {
		if i := slices.Index(q.Options, v); i >= 0 {
			out[i].Count++
		}
	}
	return out
}

// movement counts how participants who voted in both moved from the
// round before r to r, in option order.
func (s *Session) movement(q *question, r *round) []Move {
	if r.Round < 2 {
		return nil
	}
	prev := q.rounds[r.Round-2]
	n := map[[2]string]int{}
	for pid, to := range r.votes {
		if from, ok := prev.votes[pid]; ok {
			n[[2]string{from, to}]++
		}
	}
	var out []Move
	for _, from := range q.Options {
		for _, to := range q.Options {
			if c := n[[2]string{from, to}]; c > 0 {
				out = append(out, Move{From: from, To: to, Count: c})
			}
		}
	}
	return out
}

// stateFor is the session as c may see it. s.mu is held.
func (s *Session) stateFor(c *conn) *State {
	st := &State{Code: s.code, Epoch: s.epoch, Role: c.role, Lesson: s.lesson, Focus: s.focus, RunID: s.runID,
		Ended: s.ended, Connected: s.connected(), Questions: []QuestionState{}}
	host := c.role == RoleHost
	if c.p != nil {
		st.You = c.p.view()
	}
	for _, iq := range s.info.Questions {
		q := s.questions[iq.ID]
		qs := QuestionState{ID: q.ID, Type: q.Type, Options: q.Options, Answered: q.answered(), Rounds: []RoundState{}}
		if host || qs.Answered {
			qs.Correct = q.Correct
		}
		if qs.Answered {
			qs.Explain = q.Explain
		}
		for _, r := range q.rounds {
			rs := RoundState{Round: r.Round, Status: r.Status, Total: len(r.votes)}
			if c.p != nil {
				rs.Yours = r.votes[c.p.ID]
			}
			if host || r.Status == store.RoundRevealed {
				rs.Counts = s.counts(q, r)
				rs.Movement = s.movement(q, r)
			}
			qs.Rounds = append(qs.Rounds, rs)
		}
		st.Questions = append(st.Questions, qs)
	}
	if host {
		st.Participants = []ParticipantView{}
		for _, p := range s.participants {
			st.Participants = append(st.Participants, *p.view())
		}
	}
	return st
}

// State returns the session as a host sees it (for pages and tests).
func (s *Session) State() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateFor(&conn{role: RoleHost})
}

// ParticipantState returns the session as participant id sees it.
func (s *Session) ParticipantState(id int) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &conn{role: RoleParticipant}
	if id >= 1 && id <= len(s.participants) {
		c.p = s.participants[id-1]
	}
	return s.stateFor(c)
}

// handle applies one validated message from c.
func (s *Session) handle(c *conn, in In) {
	if in.Kind == KindVote && c.role == RoleParticipant {
		s.handleVote(c, in)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hostKind(in.Kind) && c.role != RoleHost {
		s.refuse(c, in.Ref, ErrCodeForbidden, "Only the instructor can "+verb(in.Kind)+"; your message was ignored.")
		return
	}
	if in.Kind == KindVote && c.role != RoleParticipant {
		s.refuse(c, in.Ref, ErrCodeForbidden, "The "+c.role+" view does not vote; join with the code in another browser to vote.")
		return
	}
	if s.ended {
		s.refuse(c, in.Ref, ErrCodeConflict, "The session has ended.")
		return
	}
	var q *question
	if in.Question != "" {
		if q = s.questions[in.Question]; q == nil {
			s.refuse(c, in.Ref, ErrCodeInvalid, fmt.Sprintf("This lesson has no question %q; its questions are %s.", in.Question, s.questionList()))
			return
		}
	}
	s.touch()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var err error
	switch in.Kind {
	case KindOpen:
		err = s.open(ctx, q, false)
	case KindNextRound:
		err = s.open(ctx, q, true)
	case KindClose:
		err = s.close(ctx, q)
	case KindReveal:
		err = s.reveal(ctx, q)
	case KindAnswer:
		err = s.answer(ctx, q)
	case KindRun:
		err = s.run(ctx, in.Lab, in.Knobs)
	case KindEnd:
		s.endLocked(true)
	}
	var re *Refusal
	switch {
	case errors.As(err, &re):
		s.refuse(c, in.Ref, re.code, re.msg)
	case err != nil:
		s.m.log.Error("class session message failed", "session", s.code, "kind", in.Kind, "err", err)
		s.refuse(c, in.Ref, ErrCodeInternal, "Something went wrong on the server; it has been logged. Try again.")
	}
}

// Refusal is a message the sender gets back instead of its effect: one of
// the ErrCode values and a sentence safe to show. A RunFunc returns one to
// say why a run was not started; any other error it returns is logged and
// the host is told so.
type Refusal struct{ code, msg string }

// Refuse returns a Refusal with the code and message.
func Refuse(code, msg string) *Refusal { return &Refusal{code, msg} }

func (r *Refusal) Error() string { return r.code + ": " + r.msg }

func conflict(format string, a ...any) error {
	return &Refusal{ErrCodeConflict, fmt.Sprintf(format, a...)}
}

func (s *Session) questionList() string {
	ids := make([]string, len(s.info.Questions))
	for i, q := range s.info.Questions {
		ids[i] = q.ID
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

func verb(kind string) string {
	switch kind {
	case KindOpen:
		return "open voting"
	case KindClose:
		return "close voting"
	case KindReveal:
		return "reveal the votes"
	case KindAnswer:
		return "show the answer"
	case KindNextRound:
		return "start a second round"
	case KindRun:
		return "start a run"
	default:
		return "end the session"
	}
}

func (s *Session) openQuestion() *question {
	for _, q := range s.questions {
		if r := q.last(); r != nil && r.Status == store.RoundOpen {
			return q
		}
	}
	return nil
}

// handleVote records a participant's vote: checked and applied in memory
// under the lock, stored by the vote writer (group commit) without the
// lock, then acknowledged to the voter and tallied to the hosts.
func (s *Session) handleVote(c *conn, in In) {
	s.mu.Lock()
	q, r, err := s.checkVote(in)
	if err != nil {
		re := err.(*Refusal)
		s.refuse(c, in.Ref, re.code, re.msg)
		s.mu.Unlock()
		return
	}
	pid := c.p.ID
	prev, had := r.votes[pid]
	r.votes[pid] = in.Option
	s.touch()
	done := s.m.queueVote(s.code, store.ClassVote{Question: q.ID, Round: r.Round, Participant: pid, Option: in.Option, At: s.m.cfg.Now().UTC()})
	s.mu.Unlock()

	err = <-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.m.log.Error("storing a class vote", "session", s.code, "question", q.ID, "err", err)
		if r.votes[pid] == in.Option {
			if had {
				r.votes[pid] = prev
			} else {
				delete(r.votes, pid)
			}
		}
		s.refuse(c, in.Ref, ErrCodeInternal, "Your vote could not be saved; it has been logged. Try again.")
		return
	}
	s.reply(c, Out{Kind: KindVoted, Ref: in.Ref, Question: q.ID, Round: r.Round, Option: in.Option})
	s.broadcast(Out{Kind: KindTally, Question: q.ID, Round: r.Round, Option: in.Option, Participant: c.p.view(),
		Counts: s.counts(q, r), Total: len(r.votes), Movement: s.movement(q, r)}, true)
}

// checkVote finds the question and open round a vote is for, or says why
// it is refused. s.mu is held.
func (s *Session) checkVote(in In) (*question, *round, error) {
	if s.ended {
		return nil, nil, conflict("The session has ended.")
	}
	q := s.questions[in.Question]
	if q == nil {
		return nil, nil, &Refusal{ErrCodeInvalid, fmt.Sprintf("This lesson has no question %q; its questions are %s.", in.Question, s.questionList())}
	}
	if !slices.Contains(q.Options, in.Option) {
		return nil, nil, &Refusal{ErrCodeInvalid, fmt.Sprintf("Question %s has no option %q; its options are %s.", q.label(), in.Option, strings.Join(q.Options, ", "))}
	}
	r := q.last()
	if r == nil {
		return nil, nil, conflict("Voting on %s has not opened yet.", q.label())
	}
	if r.Status != store.RoundOpen {
		return nil, nil, conflict("Voting on %s is closed; your vote is locked.", q.label())
	}
	return q, r, nil
}

// setFocus makes id the block the class is on (the presenter view shows
// it) and stores it. s.mu is held.
func (s *Session) setFocus(ctx context.Context, id string) error {
	if s.focus == id {
		return nil
	}
	s.focus = id
	if err := s.m.cfg.Store.UpdateClassSession(ctx, s.code, s.focus, s.runID, s.activeAt); err != nil {
		return err
	}
	s.savedActive = s.activeAt
	return nil
}

func (s *Session) open(ctx context.Context, q *question, next bool) error {
	if other := s.openQuestion(); other != nil {
		if other == q {
			return conflict("Voting on %s is already open.", q.label())
		}
		return conflict("Voting on %s is still open: close it first.", other.label())
	}
	n := len(q.rounds)
	switch {
	case !next && n > 0:
		return conflict("The class has voted on %s already; start a second round instead.", q.label())
	case next && n == 0:
		return conflict("The class has not voted on %s yet: open voting first.", q.label())
	case next && q.answered():
		return conflict("The answer to %s is showing, so a second round would not tell what the class thinks.", q.label())
	case next && n >= MaxRounds:
		return conflict("The class has voted %d times on %s, the most a question allows.", MaxRounds, q.label())
	}
	r := &round{ClassRound: store.ClassRound{Question: q.ID, Round: n + 1, Status: store.RoundOpen, OpenedAt: s.m.cfg.Now().UTC()},
		votes: map[int]string{}}
	if err := s.m.cfg.Store.SaveClassRound(ctx, s.code, r.ClassRound); err != nil {
		return err
	}
	q.rounds = append(q.rounds, r)
	if err := s.setFocus(ctx, q.ID); err != nil {
		return err
	}
	s.broadcast(Out{Kind: KindRound, Question: q.ID, Round: r.Round, Status: store.RoundOpen}, false)
	return nil
}

func (s *Session) close(ctx context.Context, q *question) error {
	r := q.last()
	if r == nil || r.Status != store.RoundOpen {
		return conflict("Voting on %s is not open.", q.label())
	}
	// Votes already accepted for this round are stored before it closes.
	s.m.flushVotes()
	r.Status, r.ClosedAt = store.RoundClosed, s.m.cfg.Now().UTC()
	if err := s.m.cfg.Store.SaveClassRound(ctx, s.code, r.ClassRound); err != nil {
		r.Status, r.ClosedAt = store.RoundOpen, time.Time{}
		return err
	}
	if err := s.setFocus(ctx, q.ID); err != nil {
		return err
	}
	s.broadcast(Out{Kind: KindRound, Question: q.ID, Round: r.Round, Status: store.RoundClosed, Total: len(r.votes)}, false)
	return nil
}

// reveal is the first step of the reveal: the spread of the last round's
// votes, to everyone.
func (s *Session) reveal(ctx context.Context, q *question) error {
	r := q.last()
	if r == nil {
		return conflict("The class has not voted on %s yet: open voting first.", q.label())
	}
	if r.Status == store.RoundRevealed {
		return conflict("The votes on %s are already showing.", q.label())
	}
	if r.Status == store.RoundOpen {
		if err := s.close(ctx, q); err != nil {
			return err
		}
	}
	r.Status, r.RevealedAt = store.RoundRevealed, s.m.cfg.Now().UTC()
	if err := s.m.cfg.Store.SaveClassRound(ctx, s.code, r.ClassRound); err != nil {
		r.Status, r.RevealedAt = store.RoundClosed, time.Time{}
		return err
	}
	if err := s.setFocus(ctx, q.ID); err != nil {
		return err
	}
	s.broadcast(Out{Kind: KindRevealed, Question: q.ID, Round: r.Round, Status: store.RoundRevealed,
		Counts: s.counts(q, r), Total: len(r.votes), Movement: s.movement(q, r)}, false)
	return nil
}

// answer is the second step of the reveal: which option is right, with
// every option's explanation, to everyone. A round whose spread is not
// showing yet is revealed first (and closed first if open), so every
// screen always goes through both steps in order.
func (s *Session) answer(ctx context.Context, q *question) error {
	r := q.last()
	if r == nil {
		return conflict("The class has not voted on %s yet: open voting first.", q.label())
	}
	if q.answered() {
		return conflict("The answer to %s is already showing.", q.label())
	}
	if r.Status != store.RoundRevealed {
		if err := s.reveal(ctx, q); err != nil {
			return err
		}
	}
	r.AnsweredAt = s.m.cfg.Now().UTC()
	if err := s.m.cfg.Store.SaveClassRound(ctx, s.code, r.ClassRound); err != nil {
		r.AnsweredAt = time.Time{}
		return err
	}
	if err := s.setFocus(ctx, q.ID); err != nil {
		return err
	}
	s.broadcast(Out{Kind: KindAnswered, Question: q.ID, Round: r.Round, Correct: q.Correct, Explain: q.Explain}, false)
	return nil
}

func (s *Session) run(ctx context.Context, lab string, knobs *Knobs) error {
	if !slices.Contains(s.info.Labs, lab) {
		labs := strings.Join(s.info.Labs, ", ")
		if labs == "" {
			labs = "none"
		}
		return &Refusal{ErrCodeInvalid, fmt.Sprintf("This lesson has no lab %q; its labs are %s.", lab, labs)}
	}
	if s.m.cfg.StartRun == nil {
		return conflict("This server runs no sweeps, so the class run is off.")
	}
	id, err := s.m.cfg.StartRun(ctx, s.code, s.lesson, lab, knobs)
	if err != nil {
		return err // a Refusal goes back to the host as it is; anything else is logged
	}
	s.runID, s.focus = id, lab
	if err := s.m.cfg.Store.UpdateClassSession(ctx, s.code, s.focus, s.runID, s.activeAt); err != nil {
		return err
	}
	s.savedActive = s.activeAt
	s.broadcast(Out{Kind: KindRunStart, RunID: id, Lab: lab}, false)
	return nil
}

// ParticipantName is how results show a participant: their display name,
// or "Participant N" if they gave none.
func ParticipantName(id int, name string) string {
	if name != "" {
		return name
	}
	return "Participant " + strconv.Itoa(id)
}
