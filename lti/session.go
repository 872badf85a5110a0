package lti

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"capacitylab/store"
)

// Sessions.
const (
	// SessionCookie holds a launch session's token.
	SessionCookie = "cl_lti"
	// SessionLife is how long a launch's session lasts; the learner then
	// opens the link in the course again.
	SessionLife = 8 * time.Hour
	// sessionCacheSize bounds the sessions kept in memory.
	sessionCacheSize = 4096
)

// Session is a launch's session: whose it is, from which platform and
// course, and whether they are an instructor there.
type Session = store.LTISession

// Begin starts the session of a validated launch: the platform's user
// becomes (or is again) one learner of ours, the session is stored, and
// its cookie returned. When the launch is a graded placement of lesson
// (lesson is "" for a page that is no lesson), the learner's score there
// is due to be posted.
func (t *Tool) Begin(ctx context.Context, l *Launch, lesson string) (Session, *http.Cookie, error) {
	now := t.now()
	learner, err := t.store.LTILearner(ctx, l.Platform.Issuer, l.Subject, l.Name, randomHex(16), now)
	if err != nil {
		return Session{}, nil, err
	}
	s := Session{Learner: learner, Issuer: l.Platform.Issuer, ClientID: l.Platform.ClientID, Deployment: l.Deployment,
		ContextID: l.ContextID, ContextTitle: l.ContextTitle, Instructor: l.Instructor(), CreatedAt: now, ExpiresAt: now.Add(SessionLife)}
	token := randomHex(32)
	if err := t.store.SaveLTISession(ctx, hashOf(token), s); err != nil {
		return Session{}, nil, err
	}
	if l.LineItem != "" && lesson != "" && l.MessageType == MessageResourceLink {
		g := store.LTIGrade{Issuer: l.Platform.Issuer, ClientID: l.Platform.ClientID, ResourceLink: l.ResourceLink, Learner: learner,
			Deployment: l.Deployment, Subject: l.Subject, Lesson: lesson, LineItem: l.LineItem, ContextID: l.ContextID,
			ContextTitle: l.ContextTitle, LinkTitle: l.LinkTitle}
		if err := t.store.SaveLTIGrade(ctx, g, now); err != nil {
			return Session{}, nil, err
		}
		t.poke()
	}
	return s, &http.Cookie{Name: SessionCookie, Value: token, Path: "/", MaxAge: int(SessionLife / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteNoneMode, Partitioned: true}, nil
}

// Session returns the live session whose token the request's cookie
// holds.
func (t *Tool) Session(ctx context.Context, r *http.Request) (Session, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) != 64 {
		return Session{}, false
	}
	h := hashOf(c.Value)
	s, ok := t.sessions.get(h)
	if !ok {
		s, err = t.store.LTISession(ctx, h)
		if errors.Is(err, store.ErrNoLTISession) {
			return Session{}, false
		}
		if err != nil {
			t.log.ErrorContext(ctx, "lti: reading a session", "err", err)
			return Session{}, false
		}
		t.sessions.put(h, s)
	}
	if !t.now().Before(s.ExpiresAt) {
		return Session{}, false
	}
	return s, true
}

// sessionCache keeps sessions read from the store by token hash; when
// full, one (whichever the map yields first) makes room. Sessions never
// change once stored, so a kept one is never stale.
type sessionCache struct {
	mu sync.Mutex
	m  map[string]Session
}

func (c *sessionCache) get(h string) (Session, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[h]
	return s, ok
}

func (c *sessionCache) put(h string, s Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]Session{}
	}
	if len(c.m) >= sessionCacheSize {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[h] = s
}
