package classroom

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// TestShowMovesTheFocusBack: the host's Back (a show message) makes an
// earlier question, or a lab, the focus again on every screen, and it
// stays the focus after a restart; the question's steps stay as they
// were (its answer still shows). A participant may not send it; a show
// of a lab the lesson does not have, or of a question it does not
// have, is refused to the host alone, naming what there is.
func TestShowMovesTheFocusBack(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	s, tok, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	code := s.Code()
	host := e.host(code, tok)
	host.expect(KindState)
	_, ptok := mustJoin(t, s, "Ada")
	ada := e.participant("Ada", code, ptok)
	ada.expect(KindState)
	proj := e.dial("projector", code, url.Values{"token": {s.ProjectorToken()}})
	proj.expect(KindState)
	everyone := []*client{host, ada, proj}
	skip := []string{KindPresence, KindTally}

	// p1 all the way to its answer, then c1 opened: c1 is the focus.
	host.send(In{Kind: KindAnswer, Question: "p1"})
	host.expect(KindError, skip...) // not voted on yet
	host.send(In{Kind: KindOpen, Question: "p1"})
	host.send(In{Kind: KindAnswer, Question: "p1"})
	host.send(In{Kind: KindOpen, Question: "c1"})
	for _, c := range everyone {
		for _, k := range []string{KindRound, KindRound, KindRevealed, KindAnswered, KindRound} {
			c.expect(k, skip...)
		}
	}
	if f := s.State().Focus; f != "c1" {
		t.Fatalf("focus %q after opening c1", f)
	}

	// Back to p1, then to the lab: everyone is told.
	for _, want := range []Out{{Kind: KindFocus, Question: "p1"}, {Kind: KindFocus, Lab: "lab-1"}} {
		host.send(In{Kind: KindShow, Question: want.Question, Lab: want.Lab})
		for _, c := range everyone {
			if o := c.expect(KindFocus, skip...); o.Question != want.Question || o.Lab != want.Lab {
				t.Fatalf("%s: focus message %+v, want %+v", c.name, o, want)
			}
		}
	}
	host.send(In{Kind: KindShow, Question: "p1"})
	for _, c := range everyone {
		c.expect(KindFocus, skip...)
	}
	st := s.State()
	if st.Focus != "p1" || !st.Questions[0].Answered || st.Questions[1].Rounds[0].Status != "open" {
		t.Fatalf("after Back: focus %q, p1 answered %v, c1 %+v; want p1 in focus with its answer, c1 still open", st.Focus, st.Questions[0].Answered, st.Questions[1].Rounds)
	}

	// Refusals: to the sender alone.
	ada.send(In{Kind: KindShow, Question: "c1", Ref: 3})
	if o := ada.expect(KindError, skip...); o.Code != ErrCodeForbidden || o.Ref != 3 {
		t.Fatalf("a participant's show: %+v, want forbidden", o)
	}
	host.send(In{Kind: KindShow, Lab: "lab-9", Ref: 4})
	if o := host.expect(KindError, skip...); o.Code != ErrCodeInvalid || o.Ref != 4 || !strings.Contains(o.Message, "its labs are lab-1") {
		t.Fatalf("a show of a lab the lesson lacks: %+v", o)
	}
	host.send(In{Kind: KindShow, Question: "zz", Ref: 5})
	if o := host.expect(KindError, skip...); o.Code != ErrCodeInvalid || o.Ref != 5 || !strings.Contains(o.Message, "its questions are p1, c1") {
		t.Fatalf("a show of a question the lesson lacks: %+v", o)
	}

	// A restart keeps the focus.
	e.stop()
	e.start(Config{})
	host2 := e.host(code, tok)
	if st := host2.expect(KindState).State; st.Focus != "p1" {
		t.Fatalf("focus after a restart %q, want p1", st.Focus)
	}
}
