package classroom

import (
	"context"
	"errors"
	"sync"

	"capacitylab/store"
)

// Sessions across servers. When several servers share one store
// (Store.SharedClasses: Postgres), a session's host, participants and
// projector may each be connected to a different server, and each server
// holding the session in memory follows the store: every change a
// session makes (a join, a batch of votes, a round opened, closed,
// revealed or answered, the focus, a run, the end) is stored with a
// wake-up of the session's watchers in its transaction (store.WatchClass),
// and each server keeps one Watch per session. On a wake-up the
// follower reads once what memory may lack (read) and brings the Session
// in memory up to date (apply), sending the messages the change makes to
// this server's own sockets: a tally per changed vote, a round, revealed,
// answer, run or focus message, presence for a join, ended. So one read per
// server and wake-up serves all its sockets.
//
// The store's checks are the truth. A vote this server's memory accepts
// but the store refuses (the round was closed on another server) is
// undone and refused as closed; a vote memory refuses because the round
// is not open is checked again after a fresh read before it is refused,
// and so are a participant's token this server does not know and, before
// they act, the host's messages. So memory that lags (by the time a
// notification takes: a few milliseconds, or while the store's listening
// connection is lost, until it is back, at most about 5 s) never accepts
// what the store refuses, and refuses what it accepts only for a round
// trip. A server's own writes wake it too; reading what it already holds
// changes nothing.

// follower is a Session's link to the store when servers share it.
type follower struct {
	watch    *store.Watch
	presence *store.Watch  // the session's presence across servers (presence.go); nil with watch nil
	stop     chan struct{} // closed by stopFollowing, once
	once     sync.Once
	done     chan struct{} // closed when followStore has returned
	kick     chan struct{} // a read is wanted now (syncNow)
	// waiters are closed when a read that began after they were added
	// has been applied; guarded by Session.mu.
	waiters []chan struct{}
}

// follow starts the follower of s when the store is shared. m.mu is held.
func (m *Manager) follow(s *Session) {
	if m.closed || !m.cfg.Store.SharedClasses() {
		return
	}
	f := newFollower(m.cfg.Store.WatchClass(s.code))
	f.presence = m.cfg.Store.WatchClassPresence(s.code)
	s.f = f
	// The session was read before the Watch began: read once more, so
	// nothing written between the two is missed.
	f.kick <- struct{}{}
	m.followers.Add(1)
	go s.followStore(f)
}

func newFollower(w *store.Watch) *follower {
	return &follower{watch: w, stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// stopFollowing ends the follower, if any, without waiting for it.
func (s *Session) stopFollowing() {
	if s.f != nil {
		s.f.close()
	}
}

func (f *follower) close() { f.once.Do(func() { close(f.stop) }) }

// followStore reads the session on every wake-up or request until stopped.
func (s *Session) followStore(f *follower) {
	defer s.m.followers.Done()
	defer close(f.done)
	var wakes, presence <-chan store.Wake // nil (none) for a follower that only reads when asked
	if f.watch != nil {
		wakes = f.watch.C()
		defer f.watch.Close()
	}
	if f.presence != nil {
		presence = f.presence.C()
		defer f.presence.Close()
	}
	for {
		kicked := false
		select {
		case <-f.stop:
			return
		case <-wakes:
		case <-f.kick:
			kicked = true
		case <-presence:
			// Only who is connected elsewhere changed: read only that.
			s.readPresence()
			continue
		}
		select {
		case <-f.stop:
			return
		default:
		}
		s.mu.Lock()
		waiters := f.waiters
		f.waiters = nil
		gen := s.hostGen
		s.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		c, final, err := s.read(ctx)
		var present []int
		if err == nil && kicked {
			// A read asked for (the first, or one the host or an unknown
			// token waits on) reads the presence too; a wake-up of the
			// session's other changes (a vote, a join) does not: presence
			// has wake-ups of its own.
			present, err = s.m.cfg.Store.ClassPresent(ctx, s.code, s.m.server, s.m.presenceLost())
		}
		cancel()
		s.mu.Lock()
		if err != nil {
			s.m.log.Error("reading a class session another server changed", "session", s.code, "err", err)
		} else {
			s.apply(c, gen != s.hostGen)
			if kicked {
				s.applyPresence(present)
			}
			for _, k := range final {
				if q := s.questions[k.question]; q != nil && k.round <= len(q.rounds) {
					q.rounds[k.round-1].votesFinal = true
				}
			}
		}
		s.mu.Unlock()
		for _, w := range waiters {
			close(w)
		}
	}
}

// read reads what the store has of the session that memory may lack:
// the session's row, the participants after those memory holds, every
// round, and the votes of each round whose votes memory does not yet
// hold for good. It returns the rounds whose votes it read after the
// store showed them closed: their votes can no longer change, so they
// are final once applied. s.mu is not held.
func (s *Session) read(ctx context.Context) (store.ClassSession, []voteKey, error) {
	s.mu.Lock()
	known := len(s.participants)
	s.mu.Unlock()
	st := s.m.cfg.Store
	c, err := st.ClassSessionHead(ctx, s.code, known)
	if err != nil {
		return c, nil, err
	}
	var want []store.ClassRound
	s.mu.Lock()
	for _, r := range c.Rounds {
		q := s.questions[r.Question]
		if q != nil && (r.Round > len(q.rounds) || !q.rounds[r.Round-1].votesFinal) {
			want = append(want, r)
		}
	}
	s.mu.Unlock()
	var final []voteKey
	for _, r := range want {
		votes, err := st.ClassRoundVotes(ctx, s.code, r.Question, r.Round)
		if err != nil {
			return c, nil, err
		}
		c.Votes = append(c.Votes, votes...)
		if r.Status != store.RoundOpen {
			final = append(final, voteKey{question: r.Question, round: r.Round})
		}
	}
	return c, final, nil
}

// syncNow returns once a read of the store that began after it was
// called has been applied (or ctx ends). Without a follower (one server)
// memory is the truth and it returns at once. s.mu is not held.
func (s *Session) syncNow(ctx context.Context) {
	f := s.f
	if f == nil {
		return
	}
	w := make(chan struct{})
	s.mu.Lock()
	f.waiters = append(f.waiters, w)
	s.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default: // a read is already wanted; it takes this waiter too
	}
	select {
	case <-w:
	case <-f.stop:
	case <-ctx.Done():
	}
}

// statusRank orders a round's steps: open, closed, revealed, answered.
func statusRank(r store.ClassRound) int {
	switch {
	case !r.AnsweredAt.IsZero():
		return 3
	case r.Status == store.RoundRevealed:
		return 2
	case r.Status == store.RoundClosed:
		return 1
	}
	return 0
}

// apply brings memory up to date with c, as read from the store, and
// tells this server's sockets what changed, in the order it happened.
// Everything but the focus only moves forward (participants and rounds
// are added, a round's steps advance, a vote changes only while no write
// of it by this server is under way), so a read that began before this
// server's own latest write cannot undo it; the focus and run are taken
// only when this server's host changed neither during the read
// (hostStale false), and a later read follows any such write. s.mu is
// held.
func (s *Session) apply(c store.ClassSession, hostStale bool) {
	for _, p := range c.Participants {
		if p.ID != len(s.participants)+1 {
			continue
		}
		// Its presence may have been read before it (presence has
		// wake-ups of its own).
		pp := &participant{ClassParticipant: p, remote: s.remoteNow(p.ID)}
		s.participants = append(s.participants, pp)
		s.byToken[p.TokenHash] = pp
		s.broadcast(Out{Kind: KindPresence, Participant: pp.view(), Connected: s.connected()}, true)
	}
	type step struct {
		q      *question
		r      *round
		stored store.ClassRound
	}
	var steps []step
	for _, sr := range c.Rounds {
		q := s.questions[sr.Question]
		if q == nil {
			continue
		}
		if sr.Round == len(q.rounds)+1 {
			r := &round{ClassRound: store.ClassRound{Question: sr.Question, Round: sr.Round, Status: store.RoundOpen, OpenedAt: sr.OpenedAt},
				votes: map[int]string{}}
			q.rounds = append(q.rounds, r)
			s.broadcast(Out{Kind: KindRound, Question: q.ID, Round: r.Round, Status: store.RoundOpen}, false)
		}
		if sr.Round >= 1 && sr.Round <= len(q.rounds) {
			steps = append(steps, step{q, q.rounds[sr.Round-1], sr})
		}
	}
	for _, v := range c.Votes {
		q := s.questions[v.Question]
		if q == nil || v.Round < 1 || v.Round > len(q.rounds) || v.Participant < 1 || v.Participant > len(s.participants) {
			continue
		}
		r := q.rounds[v.Round-1]
		if r.votes[v.Participant] == v.Option || s.pending[voteKey{v.Question, v.Round, v.Participant}] > 0 {
			continue
		}
		r.votes[v.Participant] = v.Option
		s.tally(q, r, v.Option, s.participants[v.Participant-1])
	}
	for _, st := range steps {
		have, want := statusRank(st.r.ClassRound), statusRank(st.stored)
		if want <= have {
			continue
		}
		if have < 1 {
			st.r.Status, st.r.ClosedAt = store.RoundClosed, st.stored.ClosedAt
			s.sayClosed(st.q, st.r)
		}
		if have < 2 && want >= 2 {
			st.r.Status, st.r.RevealedAt = store.RoundRevealed, st.stored.RevealedAt
			s.sayRevealed(st.q, st.r)
		}
		if want == 3 {
			st.r.AnsweredAt = st.stored.AnsweredAt
			s.sayAnswered(st.q, st.r)
		}
	}
	if !hostStale {
		if c.RunID != s.runID && c.RunID != "" {
			s.runID, s.focus = c.RunID, c.Focus
			s.broadcast(Out{Kind: KindRunStart, RunID: c.RunID, Lab: c.Focus}, false)
		}
		if c.Focus != s.focus && c.Focus != s.shown {
			// Another server's host showed a block again (Back): the
			// stored focus moved, and no message sent here named it.
			// (A step stores its round, then the focus: a read between
			// the two sees the focus unmoved, and the step's own
			// message names the new one.)
			out := Out{Kind: KindFocus, Lab: c.Focus}
			if s.questions[c.Focus] != nil {
				out.Question, out.Lab = c.Focus, ""
			}
			s.broadcast(out, false)
		}
		s.focus = c.Focus
	}
	if c.ActiveAt.After(s.activeAt) {
		s.activeAt, s.savedActive = c.ActiveAt, c.ActiveAt
	}
	if c.Ended() && !s.ended {
		s.endLocked(false)
	}
}

// voteKey names one participant's vote in one round (or, with no voter,
// the round).
type voteKey struct {
	question     string
	round, voter int
}

// errRoundNotOpen reports whether err is the store refusing a vote
// because the round is not open there.
func errRoundNotOpen(err error) bool { return errors.Is(err, store.ErrRoundNotOpen) }
