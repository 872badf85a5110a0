package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestLTIPlatformsUpsertListDelete(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		p := LTIPlatform{Issuer: "https://lms.example.org", ClientID: "c1", Name: "LMS", AuthURL: "https://lms.example.org/auth",
			TokenURL: "https://lms.example.org/token", JWKSURL: "https://lms.example.org/jwks", Deployments: []string{"d1"}}
		if err := s.SaveLTIPlatform(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Deployments = []string{"d1", "d2"}
		p.FrameOrigins = []string{"https://school.example.org"}
		if err := s.SaveLTIPlatform(ctx, p); err != nil {
			t.Fatal(err)
		}
		got, err := s.LTIPlatforms(ctx)
		if err != nil || len(got) != 1 {
			t.Fatalf("platforms %v, %v", got, err)
		}
		if !reflect.DeepEqual(got[0].Deployments, []string{"d1", "d2"}) || !reflect.DeepEqual(got[0].FrameOrigins, p.FrameOrigins) || got[0].CreatedAt.IsZero() {
			t.Errorf("stored %+v", got[0])
		}
		if ok, err := s.DeleteLTIPlatform(ctx, p.Issuer, "c1"); !ok || err != nil {
			t.Errorf("delete = %v, %v", ok, err)
		}
		if ok, _ := s.DeleteLTIPlatform(ctx, p.Issuer, "c1"); ok {
			t.Error("deleted twice")
		}
	})
}

func TestLTIKeysKeepTheNewest(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, id := range []string{"k1", "k2", "k3", "k4"} {
			at := t0.Add(time.Duration(i) * time.Hour)
			if err := s.AddLTIKey(ctx, LTIKey{ID: id, PrivatePEM: "pem-" + id, CreatedAt: at, SignsFrom: at}, 3); err != nil {
				t.Fatal(err)
			}
		}
		keys, err := s.LTIKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, k := range keys {
			ids = append(ids, k.ID)
		}
		if !reflect.DeepEqual(ids, []string{"k4", "k3", "k2"}) {
			t.Errorf("keys %v, want the newest three, newest first", ids)
		}
	})
}

func TestLTILoginIsUsedOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Now()
		if err := s.SaveLTILogin(ctx, LTILogin{StateHash: "h1", Nonce: "n1", Issuer: "i", ClientID: "c", CreatedAt: now, ExpiresAt: now.Add(time.Minute)}, 10); err != nil {
			t.Fatal(err)
		}
		l, err := s.LTILogin(ctx, "h1")
		if err != nil || l.Nonce != "n1" || !l.UsedAt.IsZero() {
			t.Fatalf("login %+v, %v", l, err)
		}
		if ok, err := s.UseLTILogin(ctx, "h1", now); !ok || err != nil {
			t.Fatalf("first use = %v, %v", ok, err)
		}
		if ok, _ := s.UseLTILogin(ctx, "h1", now); ok {
			t.Error("a login was used twice")
		}
		if _, err := s.LTILogin(ctx, "nope"); !errors.Is(err, ErrNoLTILogin) {
			t.Errorf("unknown state: %v", err)
		}
		// A login saved once the first has expired purges it.
		later := now.Add(2 * time.Minute)
		if err := s.SaveLTILogin(ctx, LTILogin{StateHash: "h2", Nonce: "n2", CreatedAt: later, ExpiresAt: later.Add(time.Minute)}, 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LTILogin(ctx, "h1"); !errors.Is(err, ErrNoLTILogin) {
			t.Errorf("expired login kept: %v", err)
		}
	})
}

// TestLTILoginsBounded checks that the logins waiting for their launches
// are bounded: past the limit a login is refused (ErrLTILoginsFull) and
// nothing is stored, and once the waiting ones have expired there is room
// again, the expired rows gone.
func TestLTILoginsBounded(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Now()
		const limit = 5
		save := func(i int, at time.Time) error {
			return s.SaveLTILogin(ctx, LTILogin{StateHash: fmt.Sprintf("h%d", i), Nonce: "n", Issuer: "i", ClientID: "c", CreatedAt: at, ExpiresAt: at.Add(10 * time.Minute)}, limit)
		}
		for i := range limit {
			if err := save(i, now); err != nil {
				t.Fatalf("login %d of %d: %v", i+1, limit, err)
			}
		}
		if err := save(limit, now.Add(9*time.Minute)); !errors.Is(err, ErrLTILoginsFull) {
			t.Fatalf("login %d with %d waiting: %v, want ErrLTILoginsFull", limit+1, limit, err)
		}
		if _, err := s.LTILogin(ctx, fmt.Sprintf("h%d", limit)); !errors.Is(err, ErrNoLTILogin) {
			t.Errorf("the refused login was stored: %v", err)
		}
		// Just past the first five's expiry: they go, the new one fits.
		if err := save(limit+1, now.Add(10*time.Minute+time.Second)); err != nil {
			t.Fatalf("a login after the others expired: %v", err)
		}
		var rows int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM lti_logins`).Scan(&rows); err != nil || rows != 1 {
			t.Errorf("%d rows (%v), want 1: the expired ones purged", rows, err)
		}
	})
}

func TestLTILearnerIsStablePerIssuerAndSubject(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Now()
		a, err := s.LTILearner(ctx, "iss", "sub-1", "Ada", "aaaa", now)
		if err != nil || a != "aaaa" {
			t.Fatalf("first = %q, %v", a, err)
		}
		again, _ := s.LTILearner(ctx, "iss", "sub-1", "Ada L.", "bbbb", now)
		other, _ := s.LTILearner(ctx, "iss-2", "sub-1", "", "cccc", now)
		if again != "aaaa" || other != "cccc" {
			t.Errorf("same user %q (want aaaa), same subject at another issuer %q (want cccc)", again, other)
		}
	})
}

func TestLTIGradeLifecycle(t *testing.T) {
	eachDB(t, func(t *testing.T, d testDB) {
		s := d.open(t)
		ctx := context.Background()
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		s.LTILearner(ctx, "iss", "sub-1", "Ada", "l1", now)
		g := LTIGrade{Issuer: "iss", ClientID: "c", ResourceLink: "rl", Learner: "l1", Deployment: "d", Subject: "sub-1",
			Lesson: "littles-law", LineItem: "https://lms/li/1", ContextID: "course"}
		if err := s.SaveLTIGrade(ctx, g, now); err != nil {
			t.Fatal(err)
		}
		due, err := s.DueLTIGrades(ctx, now, 10)
		if err != nil || len(due) != 1 || due[0].Name != "Ada" || due[0].Version != 1 || due[0].Status != GradePending {
			t.Fatalf("due %+v, %v", due, err)
		}
		// Progress changes while the post is in flight: the row stays pending.
		if n, _ := s.MarkLTIGradesPending(ctx, "l1", "littles-law", now); n != 1 {
			t.Fatalf("marked %d", n)
		}
		if err := s.LTIGradeSent(ctx, due[0], due[0].Version, 3, 10, now); err != nil {
			t.Fatal(err)
		}
		due, _ = s.DueLTIGrades(ctx, now, 10)
		if len(due) != 1 || due[0].Version != 2 || due[0].SentVersion != 1 || due[0].Given != 3 {
			t.Fatalf("after a post that raced a change: %+v", due)
		}
		if err := s.LTIGradeSent(ctx, due[0], due[0].Version, 4, 10, now); err != nil {
			t.Fatal(err)
		}
		if due, _ = s.DueLTIGrades(ctx, now, 10); len(due) != 0 {
			t.Fatalf("still due after it was sent: %+v", due)
		}
		// A failure backs off; new progress keeps the backoff time.
		s.MarkLTIGradesPending(ctx, "l1", "", now)
		gs, _ := s.LTIGrades(ctx, LTIGradeQuery{Learner: "l1"})
		next := now.Add(time.Minute)
		if err := s.LTIGradeFailed(ctx, gs[0], 4, 10, "503", next, false, now); err != nil {
			t.Fatal(err)
		}
		s.MarkLTIGradesPending(ctx, "l1", "littles-law", now)
		if due, _ = s.DueLTIGrades(ctx, now, 10); len(due) != 0 {
			t.Errorf("a backing-off grade is due at once after new progress: %+v", due)
		}
		if at, ok, _ := s.NextLTIGradeDue(ctx); !ok || !at.Equal(next) {
			t.Errorf("next due %v %v, want %v", at, ok, next)
		}
		// Giving up, then a course retry.
		gs, _ = s.LTIGrades(ctx, LTIGradeQuery{Issuer: "iss", ClientID: "c", ContextID: "course"})
		s.LTIGradeFailed(ctx, gs[0], 4, 10, "503", next, true, now)
		if gs, _ = s.LTIGrades(ctx, LTIGradeQuery{Learner: "l1"}); gs[0].Status != GradeFailed || gs[0].Attempts != 2 {
			t.Fatalf("after giving up: %+v", gs[0])
		}
		if n, _ := s.RetryLTIGrades(ctx, "iss", "c", "course", now); n != 1 {
			t.Errorf("retried %d", n)
		}
		if due, _ = s.DueLTIGrades(ctx, now, 10); len(due) != 1 || due[0].Attempts != 0 {
			t.Errorf("after a retry: %+v", due)
		}
	})
}
