package classroom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/wsconn"
)

// TestWholeSession drives a class through both rounds of a question with
// real websocket clients: join, vote, change vote, close, locked vote,
// reveal, second round, movement, and the results CSV.
func TestWholeSession(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	s, hostTok, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := NormalizeCode(s.Code()); !ok {
		t.Fatalf("code %q is not a valid join code", s.Code())
	}
	host := e.host(s.Code(), hostTok)
	st := host.expect(KindState).State
	if st.Role != RoleHost || len(st.Questions) != 2 || st.Questions[0].Correct != "b" {
		t.Fatalf("host state = %+v", st)
	}

	ids := map[string]int{}
	var ps []*client
	for _, name := range []string{"Ada", "", "Grace"} {
		id, tok := mustJoin(t, s, name)
		ids[name] = id
		p := e.participant("participant "+strconv.Itoa(id), s.Code(), tok)
		ps = append(ps, p)
		pst := p.expect(KindState).State
		if pst.Role != RoleParticipant || pst.You.ID != id || pst.Questions[0].Correct != "" || pst.Participants != nil {
			t.Fatalf("participant state = %+v; it must not show the answer or the other participants", pst)
		}
	}
	// The host saw each join (not yet connected) and then each connection,
	// with the count of participants connected.
	for i, name := range []string{"Ada", "", "Grace"} {
		for _, want := range []ParticipantView{{ID: ids[name], Name: name}, {ID: ids[name], Name: name, Connected: true}} {
			o := host.expect(KindPresence)
			wantConnected := i
			if want.Connected {
				wantConnected++
			}
			if o.Participant == nil || *o.Participant != want || o.Connected != wantConnected {
				t.Fatalf("presence %+v (participant %+v), want %+v with %d connected", o, o.Participant, want, wantConnected)
			}
		}
	}

	host.send(In{Kind: KindOpen, Question: "p1"})
	for _, c := range append([]*client{host}, ps...) {
		o := c.expect(KindRound, KindPresence)
		if o.Question != "p1" || o.Round != 1 || o.Status != "open" {
			t.Fatalf("%s: round message = %+v", c.name, o)
		}
	}

	ada, anon, grace := ps[0], ps[1], ps[2]
	ada.send(In{Kind: KindVote, Question: "p1", Option: "a", Ref: 1})
	if o := ada.expect(KindVoted); o.Option != "a" || o.Ref != 1 || o.Round != 1 {
		t.Fatalf("voted = %+v", o)
	}
	if o := host.expect(KindTally, KindPresence); counts(o.Counts) != "a=1 b=0 c=0" || o.Participant.ID != ids["Ada"] {
		t.Fatalf("tally = %+v", o)
	}
	ada.send(In{Kind: KindVote, Question: "p1", Option: "b", Ref: 2})
	ada.expect(KindVoted)
	if o := host.expect(KindTally); counts(o.Counts) != "a=0 b=1 c=0" || o.Total != 1 {
		t.Fatalf("after a change of vote the tally = %+v, want one vote, for b", o)
	}
	anon.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	anon.expect(KindVoted)
	grace.send(In{Kind: KindVote, Question: "p1", Option: "c"})
	grace.expect(KindVoted)
	host.expect(KindTally)
	if o := host.expect(KindTally); counts(o.Counts) != "a=1 b=1 c=1" || o.Total != 3 {
		t.Fatalf("tally = %+v", o)
	}

	// A participant's try at a host action is refused to them alone.
	grace.send(In{Kind: KindReveal, Question: "p1", Ref: 9})
	if o := grace.expect(KindError); o.Code != ErrCodeForbidden || o.Ref != 9 {
		t.Fatalf("error = %+v", o)
	}

	host.send(In{Kind: KindClose, Question: "p1"})
	// Everyone's next message is the close: nobody else saw Grace's error
	// or a participant's tally.
	for _, c := range append([]*client{host}, ps...) {
		if o := c.next(); o.Kind != KindRound || o.Status != "closed" || o.Total != 3 {
			t.Fatalf("%s: got %+v, want round closed with 3 votes", c.name, o)
		}
	}
	// The vote is locked now.
	ada.send(In{Kind: KindVote, Question: "p1", Option: "c", Ref: 3})
	if o := ada.expect(KindError); o.Code != ErrCodeConflict || o.Ref != 3 {
		t.Fatalf("late vote: %+v, want a conflict error", o)
	}

	host.send(In{Kind: KindReveal, Question: "p1"})
	for _, c := range append([]*client{host}, ps...) {
		o := c.expect(KindRevealed)
		if counts(o.Counts) != "a=1 b=1 c=1" || o.Total != 3 || o.Movement != nil {
			t.Fatalf("%s: revealed = %+v", c.name, o)
		}
	}

	host.send(In{Kind: KindNextRound, Question: "p1"})
	for _, c := range append([]*client{host}, ps...) {
		if o := c.expect(KindRound); o.Round != 2 || o.Status != "open" {
			t.Fatalf("%s: %+v, want round 2 open", c.name, o)
		}
	}
	// Round 2: Ada stays on b, the anonymous one moves a→b, Grace c→b.
	for _, p := range ps {
		p.send(In{Kind: KindVote, Question: "p1", Option: "b"})
		if o := p.expect(KindVoted); o.Round != 2 {
			t.Fatalf("%s: voted %+v, want round 2", p.name, o)
		}
	}
	// The host sees the answers move as the votes come in, before any
	// reveal, as a reload's state would show it.
	var tally Out
	for range ps {
		tally = host.expect(KindTally)
	}
	if got, want := fmt.Sprint(tally.Movement), fmt.Sprint([]Move{{"a", "b", 1}, {"b", "b", 1}, {"c", "b", 1}}); tally.Round != 2 || got != want {
		t.Fatalf("host's last round-2 tally: round %d, movement %s, want %s", tally.Round, got, want)
	}
	host.send(In{Kind: KindReveal, Question: "p1"}) // closes and reveals
	if o := host.expect(KindRound, KindTally); o.Status != "closed" {
		t.Fatalf("host: %+v", o)
	}
	o := host.expect(KindRevealed)
	if counts(o.Counts) != "a=0 b=3 c=0" {
		t.Fatalf("round 2 counts = %s", counts(o.Counts))
	}
	want := []Move{{"a", "b", 1}, {"b", "b", 1}, {"c", "b", 1}}
	if len(o.Movement) != len(want) {
		t.Fatalf("movement = %+v, want %+v", o.Movement, want)
	}
	for i := range want {
		if o.Movement[i] != want[i] {
			t.Fatalf("movement = %+v, want %+v", o.Movement, want)
		}
	}
	// No third round.
	host.send(In{Kind: KindNextRound, Question: "p1"})
	if o := host.expect(KindError); o.Code != ErrCodeConflict {
		t.Fatalf("third round: %+v", o)
	}

	res := s.Results()
	var buf bytes.Buffer
	if err := res.WriteCountsCSV(&buf); err != nil {
		t.Fatal(err)
	}
	// Rows follow the letters the class saw (A is option c); an option's
	// words that would start a spreadsheet formula are quoted.
	wantCounts := `question,prompt,type,round,status,letter,option,option_text,correct,count
p1,"When the rate doubles, what happens to the requests in flight?",predict,1,revealed,A,c,"'-1, they never settle",no,1
p1,"When the rate doubles, what happens to the requests in flight?",predict,1,revealed,B,a,They double,no,1
p1,"When the rate doubles, what happens to the requests in flight?",predict,1,revealed,C,b,More than double,yes,1
p1,"When the rate doubles, what happens to the requests in flight?",predict,2,revealed,A,c,"'-1, they never settle",no,0
p1,"When the rate doubles, what happens to the requests in flight?",predict,2,revealed,B,a,They double,no,0
p1,"When the rate doubles, what happens to the requests in flight?",predict,2,revealed,C,b,More than double,yes,3
`
	if buf.String() != wantCounts {
		t.Errorf("counts CSV:\n%s\nwant:\n%s", buf.String(), wantCounts)
	}
	buf.Reset()
	if err := res.WriteAnswersCSV(&buf); err != nil {
		t.Fatal(err)
	}
	const prompt = `"When the rate doubles, what happens to the requests in flight?"`
	wantAnswers := `participant,name,question,prompt,round,letter,option,option_text,correct
1,Ada,p1,` + prompt + `,1,C,b,More than double,yes
1,Ada,p1,` + prompt + `,2,C,b,More than double,yes
2,Participant 2,p1,` + prompt + `,1,B,a,They double,no
2,Participant 2,p1,` + prompt + `,2,C,b,More than double,yes
3,Grace,p1,` + prompt + `,1,A,c,"'-1, they never settle",no
3,Grace,p1,` + prompt + `,2,C,b,More than double,yes
`
	if buf.String() != wantAnswers {
		t.Errorf("answers CSV:\n%s\nwant:\n%s", buf.String(), wantAnswers)
	}
}

// TestStateMachineRefusals checks each host action that the state does
// not allow is refused with a conflict and changes nothing.
func TestStateMachineRefusals(t *testing.T) {
	e := newEnv(t, Config{})
	s, tok, err := e.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), tok)
	host.expect(KindState)
	steps := []struct {
		what string // plain-English description
		in   In
		want string // kind of the reply: a broadcast or an error code
	}{
		{"closing a question never opened is refused", In{Kind: KindClose, Question: "p1"}, ErrCodeConflict},
		{"revealing a question never opened is refused", In{Kind: KindReveal, Question: "p1"}, ErrCodeConflict},
		{"a second round before the first is refused", In{Kind: KindNextRound, Question: "p1"}, ErrCodeConflict},
		{"an unknown question is invalid", In{Kind: KindOpen, Question: "nope"}, ErrCodeInvalid},
		{"opening p1 works", In{Kind: KindOpen, Question: "p1"}, KindRound},
		{"opening p1 again is refused", In{Kind: KindOpen, Question: "p1"}, ErrCodeConflict},
		{"opening c1 while p1 is open is refused", In{Kind: KindOpen, Question: "c1"}, ErrCodeConflict},
		{"the host cannot vote", In{Kind: KindVote, Question: "p1", Option: "a"}, ErrCodeForbidden},
		{"closing p1 works", In{Kind: KindClose, Question: "p1"}, KindRound},
		{"closing p1 again is refused", In{Kind: KindClose, Question: "p1"}, ErrCodeConflict},
		{"opening c1 now works", In{Kind: KindOpen, Question: "c1"}, KindRound},
		{"a run of a lab the lesson lacks is invalid", In{Kind: KindRun, Lab: "lab-9"}, ErrCodeInvalid},
		{"a run without a runner is refused", In{Kind: KindRun, Lab: "lab-1"}, ErrCodeConflict},
		{"ending the session works", In{Kind: KindEnd}, KindEnded},
	}
	for _, step := range steps {
		host.send(step.in)
		o := host.next()
		got := o.Kind
		if o.Kind == KindError {
			got = o.Code
			if o.Message == "" {
				t.Errorf("%s: error without a message", step.what)
			}
		}
		if got != step.want {
			t.Fatalf("%s: got %+v, want %s", step.what, o, step.want)
		}
	}
	if _, _, err := s.Join(context.Background(), "late"); !errors.Is(err, ErrEnded) {
		t.Fatalf("join after end: %v, want ErrEnded", err)
	}
}

// TestMalformedMessages sends bad messages from one participant and checks
// each gets an error to that participant only and the class goes on.
func TestMalformedMessages(t *testing.T) {
	e := newEnv(t, Config{})
	s, tok, err := e.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), tok)
	host.expect(KindState)
	_, badTok := mustJoin(t, s, "bad")
	_, goodTok := mustJoin(t, s, "good")
	bad := e.participant("bad", s.Code(), badTok)
	bad.expect(KindState)
	good := e.participant("good", s.Code(), goodTok)
	good.expect(KindState)
	host.expect(KindPresence)
	host.expect(KindPresence)
	host.expect(KindPresence)
	host.expect(KindPresence)

	cases := []struct {
		what string // plain-English description
		msg  string
	}{
		{"not JSON", `{"kind": "vote"`},
		{"a JSON array", `["vote"]`},
		{"an unknown field", `{"kind":"vote","question":"p1","option":"a","admin":true}`},
		{"an unknown kind", `{"kind":"delete_everything"}`},
		{"no kind", `{"question":"p1"}`},
		{"a vote without an option", `{"kind":"vote","question":"p1"}`},
		{"a vote on a question that does not exist", `{"kind":"vote","question":"zz","option":"a"}`},
		{"a vote before voting opened", `{"kind":"vote","question":"p1","option":"a"}`},
		{"two objects in one message", `{"kind":"end"}{"kind":"end"}`},
		{"an over-long field", `{"kind":"vote","question":"` + string(bytes.Repeat([]byte("x"), 100)) + `","option":"a"}`},
		{"an unknown knob", `{"kind":"run","lab":"lab-1","knobs":{"turbo":1}}`},
		{"too many rates", `{"kind":"run","lab":"lab-1","knobs":{"rates":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}}`},
		{"a knob of the wrong type", `{"kind":"run","lab":"lab-1","knobs":{"workers":"many"}}`},
		{"a show naming nothing", `{"kind":"show"}`},
		{"a show naming a question and a lab", `{"kind":"show","question":"p1","lab":"lab-1"}`},
		{"a host action", `{"kind":"end"}`},
	}
	for _, c := range cases {
		if err := bad.ws.WriteMessage(websocket.TextMessage, []byte(c.msg)); err != nil {
			t.Fatal(err)
		}
		if o := bad.next(); o.Kind != KindError || o.Message == "" {
			t.Fatalf("%s: got %+v, want an error with a message", c.what, o)
		}
	}
	if err := bad.ws.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if o := bad.next(); o.Kind != KindError {
		t.Fatalf("binary message: got %+v, want an error", o)
	}
	// A message over the size cap closes the sender's connection only.
	big := `{"kind":"vote","question":"p1","option":"` + string(bytes.Repeat([]byte("a"), MaxMessageBytes)) + `"}`
	bad.ws.WriteMessage(websocket.TextMessage, []byte(big))
	bad.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, err = bad.ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("oversized message: read error %v, want close 1009", err)
	}

	// The session carries on: the next message the others get is the
	// opening of the question (after the host hears the bad one left).
	host.send(In{Kind: KindOpen, Question: "p1"})
	if o := host.expect(KindRound, KindPresence); o.Status != "open" {
		t.Fatalf("host: %+v", o)
	}
	if o := good.next(); o.Kind != KindRound || o.Status != "open" {
		t.Fatalf("good participant: got %+v, want the round opening and nothing before it", o)
	}
	good.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	good.expect(KindVoted)
}

// TestReconnectKeepsVote checks a participant who drops mid-round gets
// their vote back, both with a fresh state and when resuming from a seq.
func TestReconnectKeepsVote(t *testing.T) {
	e := newEnv(t, Config{})
	s, tok, err := e.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), tok)
	host.expect(KindState)
	_, ptok := mustJoin(t, s, "Lin")
	p := e.participant("Lin", s.Code(), ptok)
	epoch := p.expect(KindState).State.Epoch
	host.send(In{Kind: KindOpen, Question: "p1"})
	host.expect(KindRound, KindPresence)
	p.expect(KindRound)
	p.send(In{Kind: KindVote, Question: "p1", Option: "c"})
	p.expect(KindVoted)
	host.expect(KindTally)
	since := p.last
	p.ws.Close()

	// While Lin is away the host closes the round.
	host.send(In{Kind: KindClose, Question: "p1"})
	if o := host.expect(KindRound, KindPresence); o.Status != "closed" {
		t.Fatalf("host: %+v", o)
	}

	// A reload: no since, so a fresh state with the vote kept.
	p2 := e.participant("Lin reloaded", s.Code(), ptok)
	st := p2.expect(KindState).State
	r := st.Questions[0].Rounds[0]
	if r.Yours != "c" || r.Status != "closed" || r.Counts != nil {
		t.Fatalf("after reload: round = %+v, want own vote c, closed, counts hidden", r)
	}
	p2.ws.Close()

	// A resume from the last seq seen: exactly the missed close.
	p3 := e.dial("Lin resumed", s.Code(), url.Values{"p": {ptok}, "since": {strconv.Itoa(since)}, "epoch": {epoch}})
	if o := p3.next(); o.Kind != KindRound || o.Status != "closed" || o.Seq <= since {
		t.Fatalf("resume: got %+v, want the round-closed message after seq %d", o, since)
	}
	// A resume with another epoch (as after a restart) gets a state.
	p4 := e.dial("Lin other epoch", s.Code(), url.Values{"p": {ptok}, "since": {strconv.Itoa(since)}, "epoch": {"nope"}})
	if o := p4.next(); o.Kind != KindState || o.State.Questions[0].Rounds[0].Yours != "c" {
		t.Fatalf("resume with a stale epoch: got %+v, want a state with the vote", o)
	}
}

// TestRestartKeepsSession closes the server and its SQLite file and opens
// them again: the session, participants, rounds and votes are all back,
// and the tokens still work.
func TestRestartKeepsSession(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	s, tok, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	code := s.Code()
	host := e.host(code, tok)
	host.expect(KindState)
	_, ptok := mustJoin(t, s, "Mo")
	p := e.participant("Mo", code, ptok)
	p.expect(KindState)
	host.send(In{Kind: KindOpen, Question: "p1"})
	p.expect(KindRound)
	p.send(In{Kind: KindVote, Question: "p1", Option: "b"})
	p.expect(KindVoted)
	host.expect(KindTally, KindPresence, KindRound)

	e.stop()
	e.start(Config{})

	s2, err := e.m.Get(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if !s2.IsHost(tok) || s2.IsHost(ptok) {
		t.Fatal("host token not recognised after restart (or the participant's was)")
	}
	p2 := e.participant("Mo again", code, ptok)
	st := p2.expect(KindState).State
	if st.Focus != "p1" || st.Questions[0].Rounds[0].Status != "open" || st.Questions[0].Rounds[0].Yours != "b" {
		t.Fatalf("after restart: %+v", st.Questions[0])
	}
	// Still open: Mo may change the vote, and the host's tally counts it once.
	host2 := e.host(code, tok)
	host2.expect(KindState)
	p2.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	p2.expect(KindVoted)
	if o := host2.expect(KindTally, KindPresence); counts(o.Counts) != "a=1 b=0 c=0" {
		t.Fatalf("tally after restart = %s", counts(o.Counts))
	}
}

// TestIdleExpiry ends a session after the configured idle time and checks
// it refuses joins and votes but keeps its results.
func TestIdleExpiry(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, Config{Idle: time.Hour, Now: clock, SweepEvery: time.Hour})
	ctx := context.Background()
	s, _, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	mustJoin(t, s, "early")
	now = now.Add(59 * time.Minute)
	e.m.Sweep(ctx)
	if s.Ended() {
		t.Fatal("session ended before its idle time")
	}
	mustJoin(t, s, "second") // activity: the hour starts again
	now = now.Add(59 * time.Minute)
	e.m.Sweep(ctx)
	if s.Ended() {
		t.Fatal("session ended although someone joined 59 minutes ago")
	}
	now = now.Add(2 * time.Minute)
	e.m.Sweep(ctx)
	if !s.Ended() {
		t.Fatal("session still live after 61 idle minutes")
	}
	if _, _, err := s.Join(ctx, "late"); !errors.Is(err, ErrEnded) {
		t.Fatalf("join after expiry: %v", err)
	}
	stored, err := e.st.ClassSession(ctx, s.Code())
	if err != nil || !stored.Ended() || len(stored.Participants) != 2 {
		t.Fatalf("stored session = %+v, %v; want ended with both participants", stored, err)
	}
	if got := len(s.Results().Participants); got != 2 {
		t.Fatalf("results after expiry list %d participants, want 2", got)
	}
}

// A session the idle sweep ends cancels its class run, so an abandoned
// session holds no place in the queue. (StartRun and CancelRun stand in
// for package web's ClassRuns and CancelClassRuns, whose queue this
// package does not hold; web's TestClassRunsCountAgainstTheHostsAddress
// runs them on the real runner.)
func TestIdleEndCancelsTheClassRun(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var cancelled []string
	e := newEnv(t, Config{Idle: time.Hour, Now: func() time.Time { return now }, SweepEvery: time.Hour,
		StartRun: func(ctx context.Context, session, lesson, lab, addr string, k *Knobs) (string, error) {
			return "run-of-" + session, nil
		},
		CancelRun: func(ctx context.Context, session, runID string) error {
			mu.Lock()
			defer mu.Unlock()
			cancelled = append(cancelled, session+" "+runID)
			return nil
		}})
	ctx := context.Background()
	s, tok, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), tok)
	host.expect(KindState)
	host.send(In{Kind: KindRun, Lab: "lab-1"})
	host.expect(KindRunStart)
	host.ws.Close()
	now = now.Add(61 * time.Minute)
	e.m.Sweep(ctx)
	if !s.Ended() {
		t.Fatal("session still live after 61 idle minutes")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{s.Code() + " run-of-" + s.Code()}; !slices.Equal(cancelled, want) {
		t.Errorf("cancelled %q, want %q", cancelled, want)
	}
}

// TestJoinCodeRateLimit checks that an address guessing codes is refused
// after MissLimit misses, that another address is not, and that the limit
// lifts after MissWindow.
func TestJoinCodeRateLimit(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	e := newEnv(t, Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	s, _, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	// What cannot be a code is refused but not counted: it tells a
	// guesser nothing, and typos must not lock a class out.
	for range MissLimit + 1 {
		if _, err := e.m.Lookup(ctx, "10.0.0.1", "AB0"); !errors.Is(err, ErrBadCode) {
			t.Fatalf("malformed code: %v, want ErrBadCode", err)
		}
	}
	if got, err := e.m.Lookup(ctx, "10.0.0.1", s.Code()); err != nil || got != s {
		t.Fatalf("after malformed codes only: %v, want the session", err)
	}
	wrong := "ABCDEF"
	if wrong == s.Code() {
		wrong = "ABCDEG"
	}
	for i := range MissLimit {
		if _, err := e.m.Lookup(ctx, "10.0.0.1", wrong); !errors.Is(err, ErrNoSession) {
			t.Fatalf("miss %d: %v, want ErrNoSession", i+1, err)
		}
	}
	var tm *TooManyMissesError
	if _, err := e.m.Lookup(ctx, "10.0.0.1", s.Code()); !errors.As(err, &tm) || tm.RetryAfter != MissWindow/MissLimit {
		t.Fatalf("after %d misses: %v, want TooManyMissesError with RetryAfter %v (one miss's worth)", MissLimit, err, MissWindow/MissLimit)
	}
	if got, err := e.m.Lookup(ctx, "10.0.0.2", s.Code()); err != nil || got != s {
		t.Fatalf("another address: %v", err)
	}
	now = now.Add(MissWindow)
	if got, err := e.m.Lookup(ctx, "10.0.0.1", " "+s.Code()[:3]+"-"+s.Code()[3:]+" "); err != nil || got != s {
		t.Fatalf("after the window, typed with a dash: %v", err)
	}
}

// TestJoinKey checks the join link's key: short enough for a small QR
// code, the same after a restart (derived from what the store keeps), and
// one session's key is not another's.
func TestJoinKey(t *testing.T) {
	e := newEnv(t, Config{})
	ctx := context.Background()
	a, _, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	k := a.JoinKey()
	if len(k) != 12 || !a.IsJoinKey(k) {
		t.Fatalf("join key %q (%d characters), IsJoinKey %v", k, len(k), a.IsJoinKey(k))
	}
	if a.IsJoinKey("") || b.IsJoinKey(k) || a.IsJoinKey(b.JoinKey()) || a.IsJoinKey(a.ProjectorToken()) {
		t.Error("a join key was accepted where it is not the session's")
	}
	e.stop()
	e.start(Config{})
	a2, err := e.m.Get(ctx, a.Code())
	if err != nil {
		t.Fatal(err)
	}
	if a2.JoinKey() != k {
		t.Errorf("after a restart the join key is %q, was %q: printed QR codes would stop working", a2.JoinKey(), k)
	}
}

// TestSlowClientDropped checks the rule that keeps broadcasting from ever
// waiting: a connection whose buffer is full is kicked with CloseTooSlow
// and the message is not queued. (A real socket drains into the kernel's
// buffers, megabytes on loopback, so the rule is tested on the queue.)
func TestSlowClientDropped(t *testing.T) {
	c := &conn{out: wsconn.NewQueue(2), limit: 2}
	c.enqueue([]byte("1"))
	c.enqueue([]byte("2"))
	if c.out.Ended() {
		t.Fatal("kicked with room left in the buffer")
	}
	c.enqueue([]byte("3"))
	msgs, ended, end := c.out.Take()
	if !ended || end.Code != CloseTooSlow || len(msgs) != 0 {
		t.Fatalf("ended %v with close code %d and %d queued, want ended with %d and none (a dropped client is sent nothing more)", ended, end.Code, len(msgs), CloseTooSlow)
	}
	c.enqueue([]byte("4")) // a second overflow must be harmless
}

// TestProjectorSeesWhatTheClassSees connects the projector view with its
// own token: it sees how many are connected and how many voted, but no
// names, no correct answer and no distribution before the reveal; every
// action it tries is refused; and its token is not the host's.
func TestProjectorSeesWhatTheClassSees(t *testing.T) {
	e := newEnv(t, Config{})
	s, hostTok, err := e.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	projTok := s.ProjectorToken()
	if len(projTok) < 43 || projTok == hostTok || strings.Contains(projTok, hostTok) {
		t.Fatalf("projector token %q: want 256 bits that are not the host token", projTok)
	}
	if s.IsHost(projTok) || !s.IsProjector(projTok) || s.IsProjector(hostTok) || s.IsProjector("") {
		t.Fatal("the projector token must be recognised as the projector's, and only it")
	}
	host := e.host(s.Code(), hostTok)
	host.expect(KindState)
	_, adaTok := mustJoin(t, s, "Ada")
	ada := e.participant("Ada", s.Code(), adaTok)
	if st := ada.expect(KindState).State; st.You == nil || !st.You.Connected || st.Connected != 1 {
		t.Fatalf("Ada's own state: you %+v, %d connected; want herself connected, 1 connected", st.You, st.Connected)
	}
	proj := e.dial("projector", s.Code(), url.Values{"token": {projTok}})
	st := proj.expect(KindState).State
	if st.Role != RoleProjector || st.You != nil || st.Participants != nil || st.Questions[0].Correct != "" || st.Connected != 1 {
		t.Fatalf("projector state = %+v; want role projector, 1 connected, no names, no correct answer", st)
	}

	host.send(In{Kind: KindOpen, Question: "p1"})
	if o := proj.expect(KindRound); o.Status != "open" {
		t.Fatalf("projector: %+v", o)
	}
	ada.expect(KindRound)
	ada.send(In{Kind: KindVote, Question: "p1", Option: "c"})
	ada.expect(KindVoted)
	o := proj.expect(KindTally)
	if o.Total != 1 || o.Counts != nil || o.Participant != nil || o.Option != "" {
		t.Fatalf("projector tally = %+v; want the total only", o)
	}

	// The projector may do nothing; each refusal goes to it alone.
	for _, in := range []In{
		{Kind: KindClose, Question: "p1"},
		{Kind: KindReveal, Question: "p1"},
		{Kind: KindAnswer, Question: "p1"},
		{Kind: KindNextRound, Question: "p1"},
		{Kind: KindRun, Lab: "lab-1"},
		{Kind: KindEnd},
		{Kind: KindVote, Question: "p1", Option: "a"},
	} {
		proj.send(in)
		if o := proj.expect(KindError); o.Code != ErrCodeForbidden {
			t.Fatalf("projector's %s: %+v, want forbidden", in.Kind, o)
		}
	}

	// A projector that drops and resumes gets the totals it missed, still
	// without the counts.
	since, epoch := proj.last, st.Epoch
	proj.ws.Close()
	ada.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	ada.expect(KindVoted)
	host.expect(KindTally, KindPresence, KindRound, KindTally)
	proj2 := e.dial("projector resumed", s.Code(), url.Values{"token": {projTok}, "since": {strconv.Itoa(since)}, "epoch": {epoch}})
	if o := proj2.next(); o.Kind != KindTally || o.Total != 1 || o.Counts != nil || o.Participant != nil {
		t.Fatalf("resumed projector: %+v, want the missed tally without counts or names", o)
	}

	host.send(In{Kind: KindReveal, Question: "p1"})
	proj2.expect(KindRound)
	if o := proj2.expect(KindRevealed); counts(o.Counts) != "a=1 b=0 c=0" {
		t.Fatalf("projector's reveal = %+v", o)
	}
	ada.ws.Close()
	if o := proj2.expect(KindPresence); o.Participant != nil || o.Connected != 0 {
		t.Fatalf("projector presence = %+v; want the count only", o)
	}
}
