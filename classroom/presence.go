package classroom

import (
	"context"
	"slices"
	"time"
)

// Presence across servers. On one server a participant is connected while
// it has a socket open there (participant.conns). When servers share the
// store, each also stores which participants have a socket open on it
// (Store.SetClassPresence: a row per participant and server, written when
// the first socket opens and deleted when the last closes), renews those
// rows every Config.PresenceEvery (a heartbeat, by the database's clock),
// and deletes the rows of any server silent for presenceLostAfter periods:
// a server that died stops counting. Each change wakes the session's
// presence watchers (Store.WatchClassPresence, apart from the session's
// other wake-ups, so a class connecting does not make every server read
// the whole session, nor a vote its presence); a server's follower then
// reads the participants connected through the other servers
// (Store.ClassPresent: readPresence; a read the follower is asked for
// reads it too), and a participant is connected when it is connected here
// or there (participant.remote). Presence read for a participant the
// server has yet to read is kept (Session.remoteIDs) for when it does. So a host on one server sees, in its state
// and its presence messages, every participant connected on any server,
// and a participant whose server died is shown gone within
// presenceLostAfter × PresenceEvery (15 s by default).

// presenceLost is how old a server's presence heartbeat may be before its
// participants stop counting as connected.
func (m *Manager) presenceLost() time.Duration {
	return presenceLostAfter * m.cfg.PresenceEvery
}

// presenceLoop renews this server's presence and expires that of servers
// that stopped, every PresenceEvery, until Close; on one server (SQLite)
// there is nothing to share and it returns at once.
func (m *Manager) presenceLoop() {
	defer close(m.beaten)
	if !m.cfg.Store.SharedClasses() {
		return
	}
	t := time.NewTicker(m.cfg.PresenceEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if err := m.cfg.Store.HeartbeatClassPresence(ctx, m.server); err != nil {
			m.log.Error("renewing class participants' presence", "err", err)
		}
		if _, err := m.cfg.Store.ExpireClassPresence(ctx, m.presenceLost()); err != nil {
			m.log.Error("clearing the presence of class servers that stopped", "err", err)
		}
		cancel()
	}
}

// forgetPresence deletes this server's presence when it stops (its
// sockets are closed), so the others stop counting its participants at
// once rather than after presenceLost.
func (m *Manager) forgetPresence() {
	if !m.cfg.Store.SharedClasses() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.cfg.Store.ForgetClassPresence(ctx, m.server); err != nil {
		m.log.Error("clearing this server's class presence", "err", err)
	}
}

// storePresence stores whether p has a socket open on this server, as
// memory has it now: called after each first socket and each last one.
// Writes of one session are made one at a time, each reading the count
// when it begins, so the last write stored is the latest state whatever
// the order the sockets opened and closed in. s.mu is not held.
func (s *Session) storePresence(p *participant) {
	if !s.m.cfg.Store.SharedClasses() {
		return
	}
	s.presenceMu.Lock()
	defer s.presenceMu.Unlock()
	s.mu.Lock()
	here := p.conns > 0
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.m.cfg.Store.SetClassPresence(ctx, s.code, s.m.server, p.ID, here); err != nil {
		s.m.log.Error("storing a class participant's presence", "session", s.code, "participant", p.ID, "here", here, "err", err)
	}
}

// applyPresence takes the participants connected through other servers
// (ids, as read from the store) and tells this server's hosts of each
// whose connection, here or there, changed. s.mu is held.
func (s *Session) applyPresence(ids []int) {
	s.remoteIDs = ids // kept for participants this server has yet to read (apply)
	for _, p := range s.participants {
		remote := s.remoteNow(p.ID)
		if remote == p.remote {
			continue
		}
		was := p.connected()
		p.remote = remote
		if p.connected() != was {
			s.broadcast(Out{Kind: KindPresence, Participant: p.view(), Connected: s.connected()}, true)
		}
	}
}

// readPresence reads who is connected through the other servers and
// applies it: the follower's read on a presence wake-up (the session's
// other changes come with its own wake-ups, each read with presence too).
// s.mu is not held.
func (s *Session) readPresence() {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	present, err := s.m.cfg.Store.ClassPresent(ctx, s.code, s.m.server, s.m.presenceLost())
	cancel()
	if err != nil {
		s.m.log.Error("reading who is connected to a class through other servers", "session", s.code, "err", err)
		return
	}
	s.mu.Lock()
	s.applyPresence(present)
	s.mu.Unlock()
}

// remoteNow reports whether participant id is connected through another
// server as last read (remoteIDs, in id order as ClassPresent returns
// them). s.mu is held.
func (s *Session) remoteNow(id int) bool {
	_, found := slices.BinarySearch(s.remoteIDs, id)
	return found
}
