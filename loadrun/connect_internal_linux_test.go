package loadrun

import (
	"io"
	"net"
	"testing"
	"time"
)

// The dispatcher's begin writes the request itself when the socket takes it:
// the target can read the whole request before complete, the request's
// goroutine, has run at all. (On loopback the handshake is done when
// connect returns, so the early write always goes through.) Both address
// families: begin builds the address connect(2) takes itself.
func TestBeginWritesRequest(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		t.Run(host, func(t *testing.T) {
			ln, err := net.Listen("tcp", host+":0")
			if err != nil {
				t.Skipf("SKIPPED: no loopback at %s here: %v", host, err)
			}
			defer ln.Close()
			tg, err := NewTarget("http://"+ln.Addr().String()+"/work", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var r Record
			s := tg.begin(&r, time.Now(), nil)
			if s.err != nil || s.fd < 0 {
				t.Fatalf("begin: fd %d, err %v", s.fd, s.err)
			}
			if s.wrote != len(tg.request) {
				t.Errorf("begin wrote %d of the request's %d bytes, want all of it", s.wrote, len(tg.request))
			}
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got, want := c.RemoteAddr().(*net.TCPAddr).IP.To4() != nil, host == "127.0.0.1"; got != want {
				t.Errorf("the target saw a caller from %v", c.RemoteAddr())
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			got := make([]byte, len(tg.request))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatalf("the target read %q before complete ran: %v", got, err)
			}
			if string(got) != string(tg.request) {
				t.Errorf("the target read %q, want %q", got, tg.request)
			}
			// complete writes nothing more and reads the reply.
			go func() {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
				_ = c.Close()
			}()
			tg.complete(t.Context(), &r, time.Now(), s, nil)
			if r.Outcome != OK || r.Status != 200 {
				t.Errorf("record %v/%q/%d, want ok/200", r.Outcome, r.Reason, r.Status)
			}
		})
	}
}

// A reply's end is when it reached the socket (the kernel's receive stamp),
// not when the request's goroutine got to read it: a reply that arrives at
// once but is read 150 ms later still ends near its send.
func TestReplyEndIsArrival(t *testing.T) {
	// As a sweep does: stamps held on, and the kernel's deferred step to
	// switch them on given time to run (it is a work item: milliseconds).
	defer holdArrivalStamps()()
	time.Sleep(50 * time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tg, err := NewTarget("http://"+ln.Addr().String()+"/work", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var r Record
	s := tg.begin(&r, start, nil)
	if s.err != nil {
		t.Fatal(s.err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(c, make([]byte, len(tg.request))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	answered := time.Since(start)
	time.Sleep(150 * time.Millisecond) // the goroutine is late to read
	tg.complete(t.Context(), &r, start, s, nil)
	read := time.Since(start)
	t.Logf("sent %v, answered by %v, end %v, read at %v", r.Sent, answered, r.End, read)
	if r.Outcome != OK {
		t.Fatalf("outcome %v/%q, want ok", r.Outcome, r.Reason)
	}
	if r.End > answered+20*time.Millisecond {
		t.Errorf("end %v, want the reply's arrival (by %v), not when it was read (%v)", r.End, answered, read)
	}
	if r.End < r.Sent {
		t.Errorf("end %v before sent %v", r.End, r.Sent)
	}
}
