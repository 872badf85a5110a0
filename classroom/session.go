package classroom

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"capacitylab/store"
	"capacitylab/wsconn"
)

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
	// shown is the focus the clients hold: the block the last message
	// they take it from named (a step's round, revealed or answer, a
	// run, a focus), or the stored focus they were given in a state.
	shown       string
	ended       bool
	activeAt    time.Time
	savedActive time.Time
	seq         int
	log         []logEntry
	conns       map[*conn]struct{}

	// Following the store when servers share it (follow.go): the
	// follower (nil on one server), how many focus or run changes this
	// server's host made (a read begun before one does not undo it), and
	// the votes this server is writing (a read begun before their commit
	// does not undo them).
	f       *follower
	hostGen int
	pending map[voteKey]int

	// presenceMu orders this session's presence writes (presence.go);
	// remoteIDs are the participants connected through other servers as
	// last read, in id order, some perhaps not yet read themselves.
	presenceMu sync.Mutex
	remoteIDs  []int
}

type participant struct {
	store.ClassParticipant
	conns  int  // sockets open on this server
	remote bool // a socket open on another server, as last read (presence.go)
}

// connected reports whether p has a socket open on any server.
func (p *participant) connected() bool { return p.conns > 0 || p.remote }

func (p *participant) view() *ParticipantView {
	return &ParticipantView{ID: p.ID, Name: p.Name, Connected: p.connected()}
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
// A token this server does not know is looked for again in the store
// when servers share it (the participant may have joined on another).
func (s *Session) Participant(token string) (id int, name string, ok bool) {
	if token == "" {
		return 0, "", false
	}
	if id, name, ok = s.participant(token); ok || s.f == nil {
		return id, name, ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.syncNow(ctx)
	return s.participant(token)
}

func (s *Session) participant(token string) (id int, name string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byToken[hashToken(token)]
	if p == nil {
		return 0, "", false
	}
	return p.ID, p.Name, true
}

// Join adds a participant with an optional display name and returns their
// id and token (the token goes in the participant's cookie; only its hash
// is stored).
func (s *Session) Join(ctx context.Context, name string) (id int, token string, err error) {
	name, err = CheckName(name)
	if err != nil {
		return 0, "", err
	}
	// Another server may have given the next id to its own joiner: then
	// the store refuses it, and the join is tried again after reading
	// who joined there.
	for try := 0; ; try++ {
		id, token, err = s.join(ctx, name)
		if !errors.Is(err, store.ErrParticipantTaken) || s.f == nil || try == 4 {
			return id, token, err
		}
		s.syncNow(ctx)
	}
}

func (s *Session) join(ctx context.Context, name string) (id int, token string, err error) {
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

// flushActive stores the last activity time if it changed (only that:
// the focus is the host's to store, and on a shared store another
// server's host may have moved it).
func (s *Session) flushActive() {
	if !s.activeAt.After(s.savedActive) || s.ended {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.m.cfg.Store.TouchClassSession(ctx, s.code, s.activeAt); err != nil {
		s.m.log.Error("saving class session activity", "session", s.code, "err", err)
		return
	}
	s.savedActive = s.activeAt
}

// connected counts the participants with a socket open on any server.
func (s *Session) connected() int {
	n := 0
	for _, p := range s.participants {
		if p.connected() {
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
	if !hostsOnly {
		switch o.Kind {
		case KindRound, KindRevealed, KindAnswered, KindFocus:
			s.shown = cmp.Or(o.Question, o.Lab)
		case KindRunStart:
			s.shown = o.Lab
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

// endLocked ends the session: stored (save), its run cancelled (save),
// told to everyone, connections closed once the message is written. s.mu
// is held.
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
		// The server that ends the session cancels its run (an end
		// heard from another server was cancelled there).
		s.m.cancelEnded(s.code, s.runID)
	}
	s.broadcast(Out{Kind: KindEnded}, false)
	for c := range s.conns {
		c.kick(wsconn.CloseEnd, "session ended")
	}
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
	if c.role == RoleHost && s.f != nil {
		// The host acts on the session as stored, whichever server
		// changed it last.
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		s.syncNow(ctx)
		cancel()
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
		err = s.run(ctx, in.Lab, c.addr, in.Knobs)
	case KindCancel:
		err = s.cancelRun(ctx)
	case KindShow:
		err = s.show(ctx, q, in.Lab)
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
