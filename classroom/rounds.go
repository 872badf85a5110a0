package classroom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"capacitylab/store"
)

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
	// votesFinal: this server's follower read the round's votes after
	// the store showed it closed, so they cannot change and are not read
	// again (follow.go).
	votesFinal bool
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
	case KindShow:
		return "choose what the presenter view shows"
	case KindCancel:
		return "cancel the class run"
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
	if err != nil && s.f != nil && !s.ended && q != nil {
		// Refused for the round's state: another server may have
		// opened it. Ask the store before refusing.
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		s.syncNow(ctx)
		cancel()
		s.mu.Lock()
		q, r, err = s.checkVote(in)
	}
	if err != nil {
		re := err.(*Refusal)
		s.refuse(c, in.Ref, re.code, re.msg)
		s.mu.Unlock()
		return
	}
	pid := c.p.ID
	prev, had := r.votes[pid]
	r.votes[pid] = in.Option
	key := voteKey{q.ID, r.Round, pid}
	s.pending[key]++
	s.touch()
	done := s.m.queueVote(s.code, store.ClassVote{Question: q.ID, Round: r.Round, Participant: pid, Option: in.Option, At: s.m.cfg.Now().UTC()})
	s.mu.Unlock()

	err = <-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[key]--; s.pending[key] <= 0 {
		delete(s.pending, key)
	}
	if err != nil {
		if r.votes[pid] == in.Option {
			if had {
				r.votes[pid] = prev
			} else {
				delete(r.votes, pid)
			}
		}
		if errRoundNotOpen(err) {
			// Another server closed the round; its wake-up brings the
			// closed round here too.
			s.refuse(c, in.Ref, ErrCodeConflict, fmt.Sprintf("Voting on %s is closed; your vote is locked.", q.label()))
			return
		}
		s.m.log.Error("storing a class vote", "session", s.code, "question", q.ID, "err", err)
		s.refuse(c, in.Ref, ErrCodeInternal, "Your vote could not be saved; it has been logged. Try again.")
		return
	}
	s.reply(c, Out{Kind: KindVoted, Ref: in.Ref, Question: q.ID, Round: r.Round, Option: in.Option})
	s.tally(q, r, in.Option, c.p)
}

// tally tells the hosts (and, their part, the projectors) that p voted
// option in round r. s.mu is held.
func (s *Session) tally(q *question, r *round, option string, p *participant) {
	s.broadcast(Out{Kind: KindTally, Question: q.ID, Round: r.Round, Option: option, Participant: p.view(),
		Counts: s.counts(q, r), Total: len(r.votes), Movement: s.movement(q, r)}, true)
}

// checkVote finds the question and open round a vote is for, or says why
// it is refused; when it is refused for the round's state (not open), it
// returns the question too. s.mu is held.
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
		return q, nil, conflict("Voting on %s has not opened yet.", q.label())
	}
	if r.Status != store.RoundOpen {
		return q, nil, conflict("Voting on %s is closed; your vote is locked.", q.label())
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
	s.hostGen++
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
	s.sayClosed(q, r)
	return nil
}

// sayClosed, sayRevealed and sayAnswered tell everyone that round r of q
// closed, shows its spread, or shows q's answer. s.mu is held.
func (s *Session) sayClosed(q *question, r *round) {
	s.broadcast(Out{Kind: KindRound, Question: q.ID, Round: r.Round, Status: store.RoundClosed, Total: len(r.votes)}, false)
}

func (s *Session) sayRevealed(q *question, r *round) {
	s.broadcast(Out{Kind: KindRevealed, Question: q.ID, Round: r.Round, Status: store.RoundRevealed,
		Counts: s.counts(q, r), Total: len(r.votes), Movement: s.movement(q, r)}, false)
}

func (s *Session) sayAnswered(q *question, r *round) {
	s.broadcast(Out{Kind: KindAnswered, Question: q.ID, Round: r.Round, Correct: q.Correct, Explain: q.Explain}, false)
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
	s.sayRevealed(q, r)
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
	s.sayAnswered(q, r)
	return nil
}

// noLab is the refusal of a lab the lesson does not have.
func (s *Session) noLab(lab string) error {
	labs := strings.Join(s.info.Labs, ", ")
	if labs == "" {
		labs = "none"
	}
	return &Refusal{ErrCodeInvalid, fmt.Sprintf("This lesson has no lab %q; its labs are %s.", lab, labs)}
}

// show makes question q (or, with q nil, lab) the focus again, as a
// presentation's Back shows the slide before: the presenter view shows
// it. Nothing else changes: a vote, a spread or an answer shown stays
// shown, since every screen has seen it.
func (s *Session) show(ctx context.Context, q *question, lab string) error {
	out := Out{Kind: KindFocus, Lab: lab}
	id := lab
	if q != nil {
		out.Question, out.Lab, id = q.ID, "", q.ID
	} else if !slices.Contains(s.info.Labs, lab) {
		return s.noLab(lab)
	}
	if err := s.setFocus(ctx, id); err != nil {
		return err
	}
	s.broadcast(out, false)
	return nil
}

// run starts a run of lab for the class, counted against addr, the
// address of the host who asked (see RunFunc).
func (s *Session) run(ctx context.Context, lab, addr string, knobs *Knobs) error {
	if !slices.Contains(s.info.Labs, lab) {
		return s.noLab(lab)
	}
	if s.m.cfg.StartRun == nil {
		return conflict("This server runs no sweeps, so the class run is off.")
	}
	id, err := s.m.cfg.StartRun(ctx, s.code, s.lesson, lab, addr, knobs)
	if err != nil {
		return err // a Refusal goes back to the host as it is; anything else is logged
	}
	s.runID, s.focus = id, lab
	s.hostGen++
	if err := s.m.cfg.Store.UpdateClassSession(ctx, s.code, s.focus, s.runID, s.activeAt); err != nil {
		return err
	}
	s.savedActive = s.activeAt
	s.broadcast(Out{Kind: KindRunStart, RunID: id, Lab: lab}, false)
	return nil
}

// cancelRun cancels the class run, waiting or running: the host's cancel.
// The run's own stream tells every screen (its cancelled event).
func (s *Session) cancelRun(ctx context.Context) error {
	if s.runID == "" {
		return conflict("No class run has started in this session, so there is none to cancel.")
	}
	if s.m.cfg.CancelRun == nil {
		return conflict("This server runs no sweeps, so there is no class run to cancel.")
	}
	err := s.m.cfg.CancelRun(ctx, s.code, s.runID)
	if errors.Is(err, ErrRunOver) {
		return conflict("The class run has already ended; there is nothing to cancel.")
	}
	return err
}

// cancelEnded cancels run id of session code, which has ended, if it is
// still waiting or running: a session that ends holds no place in the
// queue. A run already over is left as it is; other failures are logged.
func (m *Manager) cancelEnded(code, id string) {
	if id == "" || m.cfg.CancelRun == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.cfg.CancelRun(ctx, code, id); err != nil && !errors.Is(err, ErrRunOver) {
		m.log.Error("cancelling an ended class session's run", "session", code, "run", id, "err", err)
	}
}
