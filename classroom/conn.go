package classroom

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/wsconn"
)

// Connection limits. Timing and close codes are package wsconn's
// (wsconn.DefaultConfig), the same for every websocket of the server.
const (
	// CloseTooSlow is the close code for a client dropped because it fell
	// too far behind; it may reconnect with since = the last seq it saw.
	CloseTooSlow = wsconn.CloseTooSlow
	// hostBufferFactor is how many times Config.SendBuffer a host
	// connection buffers.
	hostBufferFactor = 4
	// maxConnsPerParticipant caps one participant's open sockets (tabs).
	maxConnsPerParticipant = 4
)

// Who is who a connection speaks for: the host, the projector, or
// participant id; and the client address it comes from, which a host's
// class runs count against (RunFunc).
type Who struct {
	Host        bool
	Projector   bool
	Participant int
	Addr        string
}

// conn is one websocket: a read pump (Serve's goroutine) and a write pump
// (wsconn.Pump) writing what waits in out.
type conn struct {
	ws      *websocket.Conn
	role    string
	addr    string // the client's address (Who.Addr)
	p       *participant
	out     *wsconn.Queue
	limit   int         // how many messages out lets wait
	closing atomic.Bool // the close frame is sent; reads may go on for wsconn.CloseGrace
}

// tooSlow is the reason given to a client dropped for falling behind.
const tooSlow = "too slow: reconnect with since=your last seq"

// enqueue hands a message to the write pump, or drops a client that lets
// more than its limit wait (CloseTooSlow). The session lock is held, so
// this never blocks.
func (c *conn) enqueue(data []byte) {
	if c.out == nil {
		return
	}
	c.out.Send(data, tooSlow)
}

// kick asks the write pump to write what is queued, then a close frame,
// and end the connection.
func (c *conn) kick(code int, text string) {
	if c.out != nil {
		c.out.End(code, text)
	}
}

// Serve runs one websocket for who until it closes: it sends the session's
// state (or, when epoch is this session's and since is still in its log,
// the messages after since), then every message meant for this client,
// and applies what the client sends. The caller has upgraded the
// connection (checking its Origin) and checked who's token.
func (s *Session) Serve(ws *websocket.Conn, who Who, since int, epoch string) {
	c := &conn{ws: ws, role: RoleParticipant, addr: who.Addr, limit: s.m.cfg.SendBuffer}
	switch {
	case who.Host:
		// A host gets a tally per vote: a burst as big as the class.
		c.role, c.limit = RoleHost, hostBufferFactor*s.m.cfg.SendBuffer
	case who.Projector:
		// So does the projector (the count of votes, without the counts).
		c.role, c.limit = RoleProjector, hostBufferFactor*s.m.cfg.SendBuffer
	}
	c.out = wsconn.NewQueue(c.limit)
	m := s.m
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		wsconn.Refuse(ws, wsconn.CloseGoingAway, "server stopping", wsconn.DefaultConfig())
		return
	}
	m.conns.Add(1)
	m.mu.Unlock()
	defer m.conns.Done()

	s.mu.Lock()
	if c.role == RoleParticipant {
		if who.Participant < 1 || who.Participant > len(s.participants) {
			s.mu.Unlock()
			ws.Close()
			return
		}
		c.p = s.participants[who.Participant-1]
		if c.p.conns >= maxConnsPerParticipant {
			s.mu.Unlock()
			wsconn.Refuse(ws, wsconn.ClosePolicy, "too many tabs open for this participant; close one", wsconn.DefaultConfig())
			return
		}
	}
	s.conns[c] = struct{}{}
	s.touch()
	if c.p != nil {
		// Counted before the state is built, so it shows this participant
		// connected.
		c.p.conns++
	}
	if !s.resume(c, since, epoch) {
		s.reply(c, Out{Kind: KindState, State: s.stateFor(c)})
	}
	first := c.p != nil && c.p.conns == 1
	if first && !c.p.remote {
		s.broadcast(Out{Kind: KindPresence, Participant: c.p.view(), Connected: s.connected()}, true)
	}
	if s.ended {
		c.kick(wsconn.CloseEnd, "session ended")
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writePump()
	}()
	if first {
		s.storePresence(c.p) // the other servers' hosts see it connected
	}
	c.readPump(s)
	c.kick(wsconn.CloseEnd, "")
	<-done
	ws.Close()

	s.mu.Lock()
	delete(s.conns, c)
	last := false
	if c.p != nil {
		c.p.conns--
		last = c.p.conns == 0
		if last && !c.p.remote {
			s.broadcast(Out{Kind: KindPresence, Participant: c.p.view(), Connected: s.connected()}, true)
		}
	}
	s.mu.Unlock()
	if last {
		s.storePresence(c.p)
	}
}

// resume queues the logged messages after since for c, if since is from
// this session's epoch and still in the log. s.mu is held.
func (s *Session) resume(c *conn, since int, epoch string) bool {
	if epoch != s.epoch || since < 0 || since > s.seq {
		return false
	}
	if since == s.seq {
		return true
	}
	if len(s.log) == 0 || since < s.log[0].seq-1 {
		return false
	}
	var todo [][]byte
	for _, e := range s.log {
		if d := e.dataFor(c.role); e.seq > since && d != nil {
			todo = append(todo, d)
		}
	}
	if len(todo) > c.limit/2 {
		return false
	}
	for _, d := range todo {
		c.enqueue(d)
	}
	return true
}

// readPump reads messages until the connection fails or closes. A message
// that is not a valid protocol message is answered with an error to this
// client only; one over MaxMessageBytes ends this connection (close code
// wsconn.CloseTooBig) and nobody else's.
func (c *conn) readPump(s *Session) {
	c.ws.SetReadLimit(MaxMessageBytes)
	cfg := wsconn.DefaultConfig()
	c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
	c.ws.SetPongHandler(func(string) error {
		if c.closing.Load() {
			return nil // keep the close grace deadline
		}
		return c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
	})
	for {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if !c.closing.Load() {
			c.ws.SetReadDeadline(time.Now().Add(cfg.PongWait))
		}
		if mt != websocket.TextMessage {
			s.mu.Lock()
			s.refuse(c, 0, ErrCodeInvalid, "Send JSON text messages, not binary ones.")
			s.mu.Unlock()
			continue
		}
		in, err := parseIn(data)
		if err != nil {
			s.mu.Lock()
			s.refuse(c, in.Ref, ErrCodeInvalid, "Message refused: "+err.Error()+".")
			s.mu.Unlock()
			continue
		}
		s.handle(c, in)
	}
}

// writePump writes queued messages and pings until the queue ends; then
// it writes a close frame (after what is still queued, unless the client
// was too slow) and gives the client wsconn.CloseGrace to answer it, or
// closes the socket when a write failed.
func (c *conn) writePump() {
	if !wsconn.Pump(context.Background(), c.ws, c.out, wsconn.DefaultConfig(), nil) {
		c.ws.Close()
		return
	}
	// Give the client a moment to answer the close; then the read pump's
	// read fails and Serve closes the socket.
	c.closing.Store(true)
	c.ws.SetReadDeadline(time.Now().Add(wsconn.CloseGrace))
}
