package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestClassSessionRoundTrip stores a session with participants, rounds and
// votes, reopens the file and reads it all back.
func TestClassSessionRoundTrip(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 11, 30, 9, 0, 0, 123456000, time.UTC)
		c := ClassSession{Code: "K7PQ2M", Lesson: "queues", HostHash: "abc", CreatedAt: t0, ActiveAt: t0}
		if err := s.CreateClassSession(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateClassSession(ctx, c); !errors.Is(err, ErrCodeTaken) {
			t.Fatalf("second create with the same code: %v, want ErrCodeTaken", err)
		}
		for i, name := range []string{"Ada", ""} {
			if err := s.AddClassParticipant(ctx, c.Code, ClassParticipant{ID: i + 1, TokenHash: "h" + name, Name: name, JoinedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		r := ClassRound{Question: "p1", Round: 1, Status: RoundOpen, OpenedAt: t0}
		if err := s.SaveClassRound(ctx, c.Code, r); err != nil {
			t.Fatal(err)
		}
		for _, v := range []ClassVote{
			{Question: "p1", Round: 1, Participant: 1, Option: "a", At: t0},
			{Question: "p1", Round: 1, Participant: 1, Option: "b", At: t0.Add(time.Second)}, // a change of vote
			{Question: "p1", Round: 1, Participant: 2, Option: "c", At: t0},
		} {
			if err := s.SaveClassVote(ctx, c.Code, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.UpdateClassSession(ctx, c.Code, "p1", "run-1", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// A second question, closed, revealed, then its answer shown: each
		// save keeps the times before it.
		r2 := ClassRound{Question: "c1", Round: 1, Status: RoundClosed, OpenedAt: t0, ClosedAt: t0.Add(time.Second)}
		for _, step := range []func(){
			func() {},
			func() { r2.Status, r2.RevealedAt = RoundRevealed, t0.Add(2*time.Second) },
			func() { r2.AnsweredAt = t0.Add(3 * time.Second) },
		} {
			step()
			if err := s.SaveClassRound(ctx, c.Code, r2); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()

		s2, err := d.openErr()
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		got, err := s2.ClassSession(ctx, c.Code)
		if err != nil {
			t.Fatal(err)
		}
		if got.Lesson != "queues" || got.Focus != "p1" || got.RunID != "run-1" || !got.CreatedAt.Equal(t0) ||
			!got.ActiveAt.Equal(t0.Add(time.Minute)) || got.Ended() {
			t.Fatalf("session = %+v", got)
		}
		if len(got.Participants) != 2 || got.Participants[0].Name != "Ada" || got.Participants[1].ID != 2 {
			t.Fatalf("participants = %+v", got.Participants)
		}
		if len(got.Rounds) != 2 || got.Rounds[1].Status != RoundOpen || !got.Rounds[1].AnsweredAt.IsZero() {
			t.Fatalf("rounds = %+v, want c1's round then p1's open one, not answered", got.Rounds)
		}
		if a := got.Rounds[0]; a.Question != "c1" || a.Status != RoundRevealed || !a.ClosedAt.Equal(t0.Add(time.Second)) ||
			!a.RevealedAt.Equal(t0.Add(2*time.Second)) || !a.AnsweredAt.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("answered round = %+v, want c1 revealed at t0+2s and answered at t0+3s", a)
		}
		if len(got.Votes) != 2 || got.Votes[0].Option != "b" || got.Votes[1].Option != "c" {
			t.Fatalf("votes = %+v, want Ada's changed vote b and c", got.Votes)
		}
		if _, err := s2.ClassSession(ctx, "ZZZZZZ"); !errors.Is(err, ErrNoSession) {
			t.Fatalf("unknown code: %v", err)
		}
	})
}

// TestClassVoteNeedsOpenRound checks the database itself refuses votes
// for rounds that are not open.
func TestClassVoteNeedsOpenRound(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		s.CreateClassSession(ctx, ClassSession{Code: "AAAAAA", Lesson: "l", HostHash: "h", CreatedAt: t0, ActiveAt: t0})
		s.AddClassParticipant(ctx, "AAAAAA", ClassParticipant{ID: 1, TokenHash: "t", JoinedAt: t0})
		cases := []struct {
			what   string // plain-English description
			status string // the round's status, "" for no round
			ok     bool
		}{
			{"no round stored", "", false},
			{"an open round", RoundOpen, true},
			{"a closed round", RoundClosed, false},
			{"a revealed round", RoundRevealed, false},
		}
		for i, c := range cases {
			q := "q" + string(rune('a'+i))
			if c.status != "" {
				if err := s.SaveClassRound(ctx, "AAAAAA", ClassRound{Question: q, Round: 1, Status: c.status, OpenedAt: t0}); err != nil {
					t.Fatal(err)
				}
			}
			err := s.SaveClassVote(ctx, "AAAAAA", ClassVote{Question: q, Round: 1, Participant: 1, Option: "a", At: t0})
			if c.ok != (err == nil) || (!c.ok && !errors.Is(err, ErrRoundNotOpen)) {
				t.Errorf("%s: SaveClassVote error %v", c.what, err)
			}
		}
	})
}

// TestEndIdleClassSessions ends only sessions idle since before the cut,
// comparing stored times correctly across whole and fractional seconds.
func TestEndIdleClassSessions(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		cut := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		for code, active := range map[string]time.Time{
			"OLDOLD": cut.Add(-time.Millisecond),      // just before the cut
			"NEWNEW": cut.Add(500 * time.Millisecond), // fractional second after
			"EDGEEE": cut,                             // exactly at the cut: not before it
			"ENDEDD": cut.Add(-time.Hour),             // already ended
		} {
			if err := s.CreateClassSession(ctx, ClassSession{Code: code, Lesson: "l", HostHash: "h", CreatedAt: active, ActiveAt: active}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.EndClassSession(ctx, "ENDEDD", cut.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		codes, err := s.EndIdleClassSessions(ctx, cut, cut.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(codes) != 1 || codes[0] != "OLDOLD" {
			t.Fatalf("ended %v, want only OLDOLD", codes)
		}
		got, _ := s.ClassSession(ctx, "ENDEDD")
		if !got.EndedAt.Equal(cut.Add(-time.Minute)) {
			t.Fatalf("an ended session's end time changed to %v", got.EndedAt)
		}
	})
}

// ClassSessionHead reads the session without its votes and only the
// participants after a given id; ClassRoundVotes reads one round's votes.
// Together they are what ClassSession reads.
func TestClassSessionInParts(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
		c := ClassSession{Code: "PARTS2", Lesson: "queues", HostHash: "h", CreatedAt: t0, ActiveAt: t0}
		if err := s.CreateClassSession(ctx, c); err != nil {
			t.Fatal(err)
		}
		for id := 1; id <= 3; id++ {
			if err := s.AddClassParticipant(ctx, c.Code, ClassParticipant{ID: id, TokenHash: string(rune('a' + id)), JoinedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []ClassRound{{Question: "p1", Round: 1, Status: RoundOpen, OpenedAt: t0}, {Question: "c1", Round: 1, Status: RoundOpen, OpenedAt: t0}} {
			if err := s.SaveClassRound(ctx, c.Code, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SaveClassVotes(ctx, c.Code, []ClassVote{{Question: "p1", Round: 1, Participant: 2, Option: "b", At: t0},
			{Question: "p1", Round: 1, Participant: 1, Option: "a", At: t0}, {Question: "c1", Round: 1, Participant: 3, Option: "a", At: t0}}); err != nil {
			t.Fatal(err)
		}
		head, err := s.ClassSessionHead(ctx, c.Code, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(head.Participants) != 2 || head.Participants[0].ID != 2 || len(head.Rounds) != 2 || head.Votes != nil {
			t.Errorf("head after participant 1: participants %+v, rounds %d, votes %d; want 2 and 3, 2 rounds, no votes",
				head.Participants, len(head.Rounds), len(head.Votes))
		}
		votes, err := s.ClassRoundVotes(ctx, c.Code, "p1", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(votes) != 2 || votes[0].Participant != 1 || votes[0].Option != "a" || votes[1].Participant != 2 {
			t.Errorf("round p1/1's votes %+v, want participant 1's a and 2's b", votes)
		}
		all, err := s.ClassSession(ctx, c.Code)
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Participants) != 3 || len(all.Votes) != 3 {
			t.Errorf("the whole session: %d participants, %d votes; want 3 and 3", len(all.Participants), len(all.Votes))
		}
		if _, err := s.ClassSessionHead(ctx, "NONE22", 0); !errors.Is(err, ErrNoSession) {
			t.Errorf("head of a session that does not exist: %v, want ErrNoSession", err)
		}
	})
}
