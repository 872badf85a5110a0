package classroom

import (
	"context"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/store"
)

// A class whose host, projector and participants are on two servers
// sharing one Postgres database: the host on A opens a round,
// participants on A and B vote, the projector on B sees every vote
// counted, a participant moving from A to B keeps its vote and sees the
// open round, a vote on B after the host closed on A is refused, and the
// reveal, the answer, the class run and the end reach B's sockets.
func TestClassAcrossServers(t *testing.T) {
	// The class run stands in for the runner's queue (package web's
	// ClassRuns), which this package does not hold.
	a, b, sa, sb, tok := classOnTwo(t, Config{StartRun: func(ctx context.Context, session, lesson, lab, addr string, k *Knobs) (string, error) {
		return "r-class-1", nil
	}})
	ctx := context.Background()
	code := sa.Code()
	// Joins on both servers get distinct ids, whichever is first.
	id1, t1 := mustJoin(t, sa, "Ada")
	id2, t2 := mustJoin(t, sb, "Bo")
	id3, t3 := mustJoin(t, sa, "Cy")
	if id1 == id2 || id2 == id3 || id1 == id3 {
		t.Fatalf("participants joined on two servers got ids %d, %d, %d; want three different ones", id1, id2, id3)
	}

	host := a.host(code, tok)
	host.expect(KindState)
	proj := b.dial("projector", code, url.Values{"token": {sa.ProjectorToken()}})
	proj.expect(KindState)
	p1 := a.participant("p1", code, t1)
	epochA := p1.expect(KindState).State.Epoch
	p2 := b.participant("p2", code, t2)
	p2.expect(KindState)
	p3 := b.participant("p3 (joined on A)", code, t3) // B learns of it from the store
	p3.expect(KindState)

	host.send(In{Kind: KindOpen, Question: "p1"})
	host.expect(KindRound, KindPresence)
	for _, c := range []*client{proj, p1, p2, p3} {
		if o := c.expect(KindRound, KindPresence); o.Status != store.RoundOpen {
			t.Fatalf("%s: round message %+v, want open", c.name, o)
		}
	}
	for _, v := range []struct {
		c      *client
		option string
	}{{p1, "a"}, {p2, "b"}, {p3, "b"}} {
		v.c.send(In{Kind: KindVote, Question: "p1", Option: v.option})
		if o := v.c.expect(KindVoted); o.Option != v.option {
			t.Fatalf("%s: voted %+v, want option %s", v.c.name, o, v.option)
		}
	}
	untilTotal(proj, 3)
	if o := untilTotal(host, 3); counts(o.Counts) != "a=1 b=2 c=0" {
		t.Errorf("host on A: tally counts %s, want a=1 b=2 c=0", counts(o.Counts))
	}

	// p1 moves from A to B with A's epoch and seq: B gives it a fresh
	// state with its vote and the open round.
	p1.ws.Close()
	p1 = b.dial("p1 on B", code, url.Values{"p": {t1}, "since": {strconv.Itoa(p1.last)}, "epoch": {epochA}})
	st := p1.expect(KindState).State
	if r := st.Questions[0].Rounds; len(r) != 1 || r[0].Status != store.RoundOpen || r[0].Yours != "a" {
		t.Fatalf("p1 on B: state rounds %+v, want round 1 open with its vote a", r)
	}
	p1.send(In{Kind: KindVote, Question: "p1", Option: "c"})
	p1.expect(KindVoted)
	if o := untilCounts(host, "a=0 b=2 c=1"); o.Total != 3 {
		t.Errorf("host on A after p1 changed its vote on B: total %d, want 3", o.Total)
	}

	host.send(In{Kind: KindClose, Question: "p1"})
	host.expect(KindRound, KindPresence, KindTally)
	p2.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	if o := p2.expect(KindError, KindRound); o.Code != ErrCodeConflict || !strings.Contains(o.Message, "closed") {
		t.Fatalf("p2 on B voting after the host closed on A: %+v, want a conflict saying voting is closed", o)
	}

	host.send(In{Kind: KindReveal, Question: "p1"})
	for _, c := range []*client{proj, p1, p2} {
		if o := c.expect(KindRevealed, KindRound, KindTally, KindPresence); counts(o.Counts) != "a=0 b=2 c=1" {
			t.Errorf("%s: revealed counts %s, want a=0 b=2 c=1", c.name, counts(o.Counts))
		}
	}
	host.send(In{Kind: KindAnswer, Question: "p1"})
	for _, c := range []*client{proj, p1, p2} {
		if o := c.expect(KindAnswered); o.Correct != "b" || o.Explain["a"] == "" {
			t.Errorf("%s: answer %+v, want b with the explanations", c.name, o)
		}
	}
	host.send(In{Kind: KindRun, Lab: "lab-1"})
	for _, c := range []*client{proj, p1, p2} {
		if o := c.expect(KindRunStart); o.RunID != "r-class-1" || o.Lab != "lab-1" {
			t.Errorf("%s: run message %+v, want run r-class-1 of lab-1", c.name, o)
		}
	}
	if st := sb.State(); st.Focus != "lab-1" || st.RunID != "r-class-1" {
		t.Errorf("B's memory: focus %q run %q, want lab-1 and r-class-1", st.Focus, st.RunID)
	}
	// The host's Back on A (show p1 again) reaches B's screens as a
	// focus message: no step there names it.
	host.send(In{Kind: KindShow, Question: "p1"})
	for _, c := range []*client{proj, p1, p2} {
		if o := c.expect(KindFocus); o.Question != "p1" || o.Lab != "" {
			t.Errorf("%s: focus message %+v, want p1", c.name, o)
		}
	}
	if st := sb.State(); st.Focus != "p1" {
		t.Errorf("B's memory: focus %q, want p1", st.Focus)
	}
	host.send(In{Kind: KindEnd})
	for _, c := range []*client{proj, p1, p2, p3} {
		c.expect(KindEnded, KindRound, KindRevealed, KindAnswered, KindRunStart, KindFocus, KindTally, KindPresence)
	}

	stored, err := b.st.ClassSession(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, v := range stored.Votes {
		got[v.Participant] = v.Option
	}
	if want := map[int]string{id1: "c", id2: "b", id3: "b"}; !maps.Equal(got, want) {
		t.Errorf("stored votes %v, want %v", got, want)
	}
	if !stored.Ended() || !sb.Ended() {
		t.Errorf("ended on A: stored %v, B's memory %v; want both", stored.Ended(), sb.Ended())
	}
}

// A server whose memory lags (here B hears no wake-ups at all) checks
// with the store before it refuses, and the store refuses what B's
// memory would accept: B knows a participant who joined on A, takes a
// vote for a round A opened, and refuses a vote after A closed it.
func TestLaggingServerAsksTheStore(t *testing.T) {
	a, b, sa, sb, tok := classOnTwo(t, Config{})
	ctx := context.Background()
	code := sa.Code()
	deafen(b.m, sb)

	_, ptok := mustJoin(t, sa, "")
	p := b.participant("p on B", code, ptok)
	p.expect(KindState)
	host := a.host(code, tok)
	host.expect(KindState)
	host.send(In{Kind: KindOpen, Question: "p1"})
	host.expect(KindRound, KindPresence)
	if r := sb.State().Questions[0].Rounds; len(r) != 0 {
		t.Fatalf("B's memory already has rounds %+v; the test needs it to lag", r)
	}
	p.send(In{Kind: KindVote, Question: "p1", Option: "a"})
	p.expect(KindVoted, KindRound, KindPresence)

	host.send(In{Kind: KindClose, Question: "p1"})
	host.expect(KindRound, KindPresence, KindTally)
	if r := sb.State().Questions[0].Rounds; len(r) != 1 || r[0].Status != store.RoundOpen {
		t.Fatalf("B's memory has rounds %+v; the test needs round 1 still open there", r)
	}
	p.send(In{Kind: KindVote, Question: "p1", Option: "b"})
	if o := p.expect(KindError); o.Code != ErrCodeConflict || !strings.Contains(o.Message, "closed") {
		t.Fatalf("a vote on B after A closed the round: %+v, want a conflict saying voting is closed", o)
	}
	stored, err := a.st.ClassSession(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Votes) != 1 || stored.Votes[0].Option != "a" {
		t.Errorf("stored votes %+v, want the one vote a", stored.Votes)
	}
	if r := sb.State().Questions[0].Rounds; len(r) != 1 || counts(r[0].Counts) != "a=1 b=0 c=0" {
		t.Errorf("B's memory after the refused vote: %+v, want its vote a kept and the refused b undone", r)
	}
}

// A host on one server sees the participants connected through another:
// in its state and live, as they connect and leave. A server that stops
// in order clears its participants' presence at once; one that dies
// (here, presence stored under a server name nobody renews) is cleared
// once its heartbeat is presenceLostAfter periods old.
func TestPresenceAcrossServers(t *testing.T) {
	const every = 100 * time.Millisecond
	a, b, sa, sb, tok := classOnTwo(t, Config{PresenceEvery: every})
	ctx := context.Background()
	code := sa.Code()
	ada, adaTok := mustJoin(t, sb, "Ada")
	host := a.host(code, tok)
	if st := host.expect(KindState).State; st.Connected != 0 {
		t.Fatalf("host on A before anyone connects: %d connected, want 0", st.Connected)
	}
	p := b.participant("Ada on B", code, adaTok)
	p.expect(KindState)
	if o := untilPresence(host, ada, true); o.Connected != 1 {
		t.Errorf("host on A when Ada connects on B: %d connected, want 1", o.Connected)
	}
	// A host socket opened later on A is told so in its state.
	st := a.host(code, tok).expect(KindState).State
	if st.Connected != 1 || len(st.Participants) != 1 || !st.Participants[0].Connected {
		t.Errorf("a new host socket on A: %d connected, participants %+v; want Ada connected", st.Connected, st.Participants)
	}
	p.ws.Close()
	if o := untilPresence(host, ada, false); o.Connected != 0 {
		t.Errorf("host on A when Ada leaves B: %d connected, want 0", o.Connected)
	}

	// One who joins on B and connects at once is shown connected on A,
	// whichever of the two wake-ups A reads first.
	cy, cyTok := mustJoin(t, sb, "Cy")
	b.participant("Cy on B", code, cyTok).expect(KindState)
	untilPresence(host, cy, true)

	// A server that died: nobody renews its presence.
	bo, _ := mustJoin(t, sa, "Bo")
	if err := b.st.SetClassPresence(ctx, code, "a-server-that-died", bo, true); err != nil {
		t.Fatal(err)
	}
	untilPresence(host, bo, true)
	began := time.Now()
	untilPresence(host, bo, false)
	if d := time.Since(began); d > presenceLostAfter*every+time.Second {
		t.Errorf("a dead server's participant was shown connected for %v after its last heartbeat, want at most %v and a little", d, presenceLostAfter*every)
	}

	// B stops in order: its participants are gone from A at once.
	p = b.participant("Ada on B again", code, adaTok)
	p.expect(KindState)
	untilPresence(host, ada, true)
	b.stop()
	untilPresence(host, ada, false)
}

// untilPresence reads c's messages until a presence message says
// participant id's connection is connected.
func untilPresence(c *client, id int, connected bool) Out {
	c.t.Helper()
	for {
		o := c.expect(KindPresence, KindTally, KindRound)
		if o.Participant != nil && o.Participant.ID == id && o.Participant.Connected == connected {
			return o
		}
	}
}

// classOnTwo starts two servers on one Postgres schema and a session of
// the test lesson on the first, and loads it on the second: a and b, the
// session as each holds it, and the host token.
func classOnTwo(t *testing.T, cfg Config) (a, b *env, sa, sb *Session, tok string) {
	t.Helper()
	rs := replicas(t, 2, cfg)
	a, b = rs[0], rs[1]
	sa, tok, err := a.m.Create(context.Background(), "queues")
	if err != nil {
		t.Fatal(err)
	}
	if sb, err = b.m.Get(context.Background(), sa.Code()); err != nil {
		t.Fatal(err)
	}
	return a, b, sa, sb, tok
}

// deafen makes s's follower hear no wake-ups: it reads the store only
// when asked (syncNow), as a server whose notifications lag would.
func deafen(m *Manager, s *Session) {
	s.f.close()
	<-s.f.done
	f := newFollower(nil)
	m.mu.Lock()
	s.f = f
	m.followers.Add(1)
	m.mu.Unlock()
	go s.followStore(f)
}

// untilTotal reads tallies until one counts total votes.
func untilTotal(c *client, total int) Out {
	c.t.Helper()
	for {
		if o := c.expect(KindTally, KindPresence); o.Total == total {
			return o
		}
	}
}

// untilCounts reads tallies until one has these counts.
func untilCounts(c *client, want string) Out {
	c.t.Helper()
	for {
		if o := c.expect(KindTally, KindPresence); counts(o.Counts) == want {
			return o
		}
	}
}
