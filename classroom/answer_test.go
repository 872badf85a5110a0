package classroom

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestTwoStepReveal runs the reveal's two steps with real websocket
// clients (the host, two participants and the projector): the spread
// first, with no answer in it; then the answer with every option's
// explanation, in that order on every screen. A participant cannot take
// either step; a late joiner, a reloaded page, a resumed socket and a
// restarted server all show the step the class is on.
func TestTwoStepReveal(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	s, tok, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	code := s.Code()
	host := e.host(code, tok)
	host.expect(KindState)
	_, adaTok := mustJoin(t, s, "Ada")
	_, boTok := mustJoin(t, s, "Bo")
	ada := e.participant("Ada", code, adaTok)
	ada.expect(KindState)
	bo := e.participant("Bo", code, boTok)
	boEpoch := bo.expect(KindState).State.Epoch
	proj := e.dial("projector", code, url.Values{"token": {s.ProjectorToken()}})
	proj.expect(KindState)
	everyone := []*client{host, ada, bo, proj}
	skip := []string{KindPresence, KindTally}

	host.send(In{Kind: KindOpen, Question: "p1"})
	for _, c := range everyone {
		c.expect(KindRound, skip...)
	}
	ada.send(In{Kind: KindVote, Question: "p1", Option: "b"}) // right
	ada.expect(KindVoted)
	bo.send(In{Kind: KindVote, Question: "p1", Option: "a"}) // wrong
	bo.expect(KindVoted)

	// A participant may take neither step; only they are told.
	for _, kind := range []string{KindReveal, KindAnswer} {
		bo.send(In{Kind: kind, Question: "p1", Ref: 5})
		if o := bo.expect(KindError); o.Code != ErrCodeForbidden || o.Ref != 5 || !strings.Contains(o.Message, "Only the instructor") {
			t.Fatalf("Bo's %s: %+v, want forbidden", kind, o)
		}
	}

	// Step 1, the spread: a revealed message with the counts and no answer.
	host.send(In{Kind: KindReveal, Question: "p1"})
	for _, c := range everyone {
		c.expect(KindRound, skip...) // closed first
		o := c.next()
		if o.Kind != KindRevealed || counts(o.Counts) != "a=1 b=1 c=0" || o.Correct != "" || o.Explain != nil {
			t.Fatalf("%s: got %+v, want the spread without the answer", c.name, o)
		}
	}
	// Until step 2 nobody but the host knows the answer, even on a reload.
	for _, st := range []*State{s.ParticipantState(2), e.dial("projector reloaded", code, url.Values{"token": {s.ProjectorToken()}}).expect(KindState).State} {
		if q := st.Questions[0]; q.Correct != "" || q.Answered || q.Explain != nil || counts(q.Rounds[0].Counts) != "a=1 b=1 c=0" {
			t.Fatalf("%s's state after the spread: %+v, want the counts and no answer", st.Role, q)
		}
	}
	since := bo.last
	bo.ws.Close()

	// Step 2, the answer: the right option and every explanation, to all.
	host.send(In{Kind: KindAnswer, Question: "p1"})
	for _, c := range []*client{host, ada, proj} {
		o := c.expect(KindAnswered, KindPresence)
		if o.Question != "p1" || o.Round != 1 || o.Correct != "b" || o.Explain["b"] != "<p>Both the rate and the time grow.</p>" || len(o.Explain) != 3 {
			t.Fatalf("%s: answer = %+v, want b with the three explanations", c.name, o)
		}
	}

	// Bo resumes from the last message seen: exactly the answer.
	bo2 := e.dial("Bo resumed", code, url.Values{"p": {boTok}, "since": {strconv.Itoa(since)}, "epoch": {boEpoch}})
	if o := bo2.next(); o.Kind != KindAnswered || o.Correct != "b" || o.Explain["a"] == "" {
		t.Fatalf("Bo resumed: %+v, want the answer he missed", o)
	}
	// A late joiner and a reload get the answer in their state, with
	// their own vote beside it.
	_, cyTok := mustJoin(t, s, "Cy")
	for _, v := range []struct {
		name, tok, yours string
	}{{"Cy, late", cyTok, ""}, {"Bo, reloaded", boTok, "a"}} {
		st := e.participant(v.name, code, v.tok).expect(KindState).State
		q := st.Questions[0]
		if !q.Answered || q.Correct != "b" || q.Explain["c"] != "<p>The queue does not empty.</p>" ||
			q.Rounds[0].Yours != v.yours || counts(q.Rounds[0].Counts) != "a=1 b=1 c=0" || st.Focus != "p1" {
			t.Fatalf("%s: state %+v, want p1 answered (b) with its explanations and the spread", v.name, q)
		}
		if st.Questions[1].Answered || st.Questions[1].Correct != "" {
			t.Fatalf("%s: c1 %+v, want no answer for a question not yet answered", v.name, st.Questions[1])
		}
	}

	// Once the answer is showing, it cannot be shown again nor a second
	// round started; the refusals name the question by its words.
	for _, in := range []In{{Kind: KindAnswer, Question: "p1"}, {Kind: KindNextRound, Question: "p1"}, {Kind: KindReveal, Question: "p1"}} {
		host.send(in)
		o := host.expect(KindError, KindPresence)
		if o.Code != ErrCodeConflict || !strings.Contains(o.Message, "‘When the rate doubles, what happens to the…’") {
			t.Fatalf("host's %s after the answer: %+v, want a conflict naming the question's words", in.Kind, o)
		}
	}

	// The answer survives a restart.
	e.stop()
	e.start(Config{})
	s2, err := e.m.Get(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if q := s2.ParticipantState(1).Questions[0]; !q.Answered || q.Correct != "b" || q.Explain["b"] == "" || q.Rounds[0].Yours != "b" {
		t.Fatalf("after a restart Ada sees %+v, want p1 answered with her vote", q)
	}
}

// TestAnswerFromAnOpenRound checks the answer step never skips the
// spread: answering a question whose voting is open closes it, reveals
// the spread and then shows the answer, three messages in that order.
func TestAnswerFromAnOpenRound(t *testing.T) {
	e := newEnv(t, Config{})
	s, tok, err := e.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), tok)
	host.expect(KindState)
	_, ptok := mustJoin(t, s, "Di")
	p := e.participant("Di", s.Code(), ptok)
	p.expect(KindState)
	host.send(In{Kind: KindAnswer, Question: "c1"})
	if o := host.expect(KindError, KindPresence); o.Code != ErrCodeConflict || !strings.Contains(o.Message, "‘Which limit holds the tail?’") {
		t.Fatalf("answering before any vote: %+v, want a conflict naming the question", o)
	}
	host.send(In{Kind: KindOpen, Question: "c1"})
	p.expect(KindRound)
	p.send(In{Kind: KindVote, Question: "c1", Option: "b"})
	p.expect(KindVoted)
	host.send(In{Kind: KindAnswer, Question: "c1"})
	var got []string
	for range 3 {
		o := p.next()
		got = append(got, o.Kind+" "+o.Status+o.Correct)
	}
	if strings.Join(got, ", ") != "round closed, revealed revealed, answer a" {
		t.Fatalf("Di got %q, want the close, the spread, then the answer a", got)
	}
}
