package classroom

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// Connection timing.
const (
	// writeWait bounds every write; a client that cannot take a message in
	// this time is dropped.
	writeWait = 5 * time.Second
	// pongWait is how long the server waits for any frame (a pong at
	// least) before it drops the connection.
	pongWait = 60 * time.Second
	// pingPeriod is how often the server pings; under pongWait.
	pingPeriod = pongWait * 9 / 10
	// CloseTooSlow is the close code for a client dropped because it fell
	// too far behind; it may reconnect with since = the last seq it saw.
	CloseTooSlow = 4000
	// hostBufferFactor is how many times Config.SendBuffer a host
	// connection buffers.
	hostBufferFactor = 4
	// closeGrace is how long a client has to answer the server's close.
	closeGrace = time.Second
	// maxConnsPerParticipant caps one participant's open sockets (tabs).
	maxConnsPerParticipant = 4
)

// Who is who a connection speaks for: the host, or participant id.
type Who struct {
	Host        bool
	Participant int
}

// conn is one websocket: a read pump (Serve's goroutine) and a write pump.
type conn struct {
	ws   *websocket.Conn
	role string
	p    *participant
	send chan []byte

	quit      chan struct{}
	once      sync.Once
	closing   atomic.Bool // the close frame is sent; reads may go on for closeGrace
	closeCode int
	closeText string
}

// enqueue hands a message to the write pump, or drops a client whose
// buffer is full. The session lock is held, so this never blocks.
func (c *conn) enqueue(data []byte) {
	if c.send == nil {
		return
	}
	select {
	case c.send <- data:
	default:
		c.kick(CloseTooSlow, "too slow: reconnect with since=your last seq")
	}
}

// kick asks the write pump to send a close frame and end the connection.
func (c *conn) kick(code int, text string) {
	c.once.Do(func() {
		c.closeCode, c.closeText = code, text
		close(c.quit)
	})
}

// Serve runs one websocket for who until it closes: it sends the session's
// state (or, when epoch is this session's and since is still in its log,
// the messages after since), then every message meant for this client,
// and applies what the client sends. The caller has upgraded the
// connection (checking its Origin) and checked who's token.
func (s *Session) Serve(ws *websocket.Conn, who Who, since int, epoch string) {
	c := &conn{ws: ws, role: RoleParticipant, send: make(chan []byte, s.m.cfg.SendBuffer), quit: make(chan struct{})}
	if who.Host {
		// A host gets a tally per vote: a burst as big as the class.
		c.role, c.send = RoleHost, make(chan []byte, hostBufferFactor*s.m.cfg.SendBuffer)
	}
	m := s.m
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "server stopping"), time.Now().Add(writeWait))
		ws.Close()
		return
	}
	m.conns.Add(1)
	m.mu.Unlock()
	defer m.conns.Done()

	s.mu.Lock()
	if !who.Host {
		if who.Participant < 1 || who.Participant > len(s.participants) {
			s.mu.Unlock()
			ws.Close()
			return
		}
		c.p = s.participants[who.Participant-1]
		if c.p.conns >= maxConnsPerParticipant {
			s.mu.Unlock()
			ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation,
				"too many tabs open for this participant; close one"), time.Now().Add(writeWait))
			ws.Close()
			return
		}
	}
	s.conns[c] = struct{}{}
	s.touch()
	if !s.resume(c, since, epoch) {
		s.reply(c, Out{Kind: KindState, State: s.stateFor(c)})
	}
	if c.p != nil {
		c.p.conns++
		if c.p.conns == 1 {
			s.broadcast(Out{Kind: KindPresence, Participant: c.p.view(), Connected: s.connected()}, true)
		}
	}
	if s.ended {
		c.kick(1000, "session ended")
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writePump()
	}()
	c.readPump(s)
	c.kick(websocket.CloseNormalClosure, "")
	<-done
	ws.Close()

	s.mu.Lock()
	delete(s.conns, c)
	if c.p != nil {
		c.p.conns--
		if c.p.conns == 0 {
			s.broadcast(Out{Kind: KindPresence, Participant: c.p.view(), Connected: s.connected()}, true)
		}
	}
	s.mu.Unlock()
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
		if e.seq > since && (!e.hostsOnly || c.role == RoleHost) {
			todo = append(todo, e.data)
		}
	}
	if len(todo) > cap(c.send)/2 {
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
// 1009) and nobody else's.
func (c *conn) readPump(s *Session) {
	c.ws.SetReadLimit(MaxMessageBytes)
	c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error {
		if c.closing.Load() {
			return nil // keep the close grace deadline
		}
		return c.ws.SetReadDeadline(time.Now().Add(pongWait))
	})
	for {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if !c.closing.Load() {
			c.ws.SetReadDeadline(time.Now().Add(pongWait))
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

// writePump writes queued messages and pings until kicked; then it writes
// what is still queued (unless the client was too slow) and a close frame.
func (c *conn) writePump() {
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	write := func(data []byte) bool {
		c.ws.SetWriteDeadline(time.Now().Add(writeWait))
		return c.ws.WriteMessage(websocket.TextMessage, data) == nil
	}
	for {
		select {
		case data := <-c.send:
			if !write(data) {
				c.ws.Close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.ws.Close()
				return
			}
		case <-c.quit:
			if c.closeCode != CloseTooSlow {
			drain:
				for {
					select {
					case data := <-c.send:
						if !write(data) {
							break drain
						}
					default:
						break drain
					}
				}
			}
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.closeCode, c.closeText), time.Now().Add(writeWait))
			// Give the client a moment to answer the close; then the
			// read pump's read fails and Serve closes the socket.
			c.closing.Store(true)
			c.ws.SetReadDeadline(time.Now().Add(closeGrace))
			return
		}
	}
}
