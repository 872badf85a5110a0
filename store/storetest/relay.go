package storetest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Relay is a TCP relay on 127.0.0.1 in front of a database server, for a
// test to cut the way to the database as an outage does without touching
// the server (which other tests share): Cut closes every relayed
// connection and refuses new ones (each is closed as soon as it is
// accepted) until Restore.
type Relay struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	cut   bool
}

// NewRelay starts a relay to the host and port of the database URL dbURL,
// stopped when the test ends.
func NewRelay(t testing.TB, dbURL string) *Relay {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("relay: %q is not a URL: %v", dbURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{t: t, ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	go r.serve()
	t.Cleanup(func() {
		ln.Close()
		r.Cut()
	})
	return r
}

// URL is dbURL with its host and port the relay's.
func (r *Relay) URL(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		r.t.Fatalf("relay: %q is not a URL: %v", dbURL, err)
	}
	u.Host = r.ln.Addr().String()
	return u.String()
}

// Cut closes every relayed connection and refuses new ones until Restore.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// Restore relays new connections again.
func (r *Relay) Restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = false
}

func (r *Relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.relay(c)
	}
}

// relay joins client c to a new connection to the target while the relay
// is not cut.
func (r *Relay) relay(c net.Conn) {
	r.mu.Lock()
	cut := r.cut
	r.mu.Unlock()
	if cut {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		c.Close()
		return
	}
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	r.conns[c], r.conns[up] = struct{}{}, struct{}{}
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}
