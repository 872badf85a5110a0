package loadrun

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"capacitylab/result"
)

// The sender's begin writes the request itself when the socket takes it:
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
			var r result.Record
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
			if r.Outcome != result.OK || r.Status != 200 {
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
	var r result.Record
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
	if r.Outcome != result.OK {
		t.Fatalf("outcome %v/%q, want ok", r.Outcome, r.Reason)
	}
	if r.End > answered+20*time.Millisecond {
		t.Errorf("end %v, want the reply's arrival (by %v), not when it was read (%v)", r.End, answered, read)
	}
	if r.End < r.Sent {
		t.Errorf("end %v before sent %v", r.End, r.Sent)
	}
}

// answered begins a request to a loopback listener that answers it at
// once, after delay, and returns the begun send, the target and when the
// answer left. The listener and its connection are closed at the test's end.
func answered(t *testing.T, timeout, delay time.Duration) (Target, send, time.Time) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	tg, err := NewTarget("http://"+ln.Addr().String()+"/work", timeout)
	if err != nil {
		t.Fatal(err)
	}
	var r result.Record
	s := tg.begin(&r, time.Now(), nil)
	if s.err != nil || s.wrote != len(tg.request) {
		t.Fatalf("begin: wrote %d, err %v", s.wrote, s.err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(c, make([]byte, len(tg.request))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	at := time.Now()
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	return tg, s, at
}

// A caller gives up at its timeout; a generator whose goroutine reads the
// reply later than that (a busy processor) must not count a reply that had
// arrived in time as given up, nor one that arrived after it as ok. Both
// are judged by the kernel's arrival stamp.
func TestGiveUpIsByArrival(t *testing.T) {
	defer holdArrivalStamps()()
	time.Sleep(50 * time.Millisecond)
	const timeout = 100 * time.Millisecond

	t.Run("answered in time, read late", func(t *testing.T) {
		tg, s, at := answered(t, timeout, 0)
		start := s.at
		time.Sleep(2 * timeout) // the goroutine gets a processor after the give-up time
		var r result.Record
		tg.complete(t.Context(), &r, start, s, nil)
		if r.Outcome != result.OK || r.Status != 200 {
			t.Fatalf("record %v/%q/%d, want ok/200: the reply arrived %v after the send, within the %v timeout",
				r.Outcome, r.Reason, r.Status, at.Sub(start), timeout)
		}
		if r.End > at.Sub(start)+20*time.Millisecond {
			t.Errorf("end %v, want the arrival (%v), not the read", r.End, at.Sub(start))
		}
	})
	t.Run("answered after the give-up time, read later still", func(t *testing.T) {
		tg, s, at := answered(t, timeout, 2*timeout)
		time.Sleep(timeout)
		var r result.Record
		tg.complete(t.Context(), &r, s.at, s, nil)
		if r.Outcome != result.Gaveup || r.Reason != result.ReasonReadTimeout {
			t.Fatalf("record %v/%q, want gaveup/%q: the reply arrived %v after the send, past the %v timeout",
				r.Outcome, r.Reason, result.ReasonReadTimeout, at.Sub(s.at), timeout)
		}
	})
	t.Run("the poller's deadline has passed, the reply is there", func(t *testing.T) {
		_, s, _ := answered(t, timeout, 0)
		time.Sleep(10 * time.Millisecond)
		a := newArrivalReader(t.Context(), s.fd, time.Now().Add(-time.Second))
		defer a.Close()
		if _, err := a.file(); err != nil { // registered, with its deadline already past
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, err := a.Read(buf)
		if err != nil || n == 0 {
			t.Fatalf("read %d bytes, err %v; want the reply that is in the socket", n, err)
		}
		if !a.late() {
			t.Errorf("late() false for bytes stamped %v, after the deadline a second ago", a.arrival())
		}
	})
	t.Run("the poller's deadline has passed, nothing there", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		tg, err := NewTarget("http://"+ln.Addr().String()+"/work", timeout)
		if err != nil {
			t.Fatal(err)
		}
		var r result.Record
		s := tg.begin(&r, time.Now(), nil)
		if s.err != nil {
			t.Fatal(s.err)
		}
		a := newArrivalReader(t.Context(), s.fd, time.Now().Add(-time.Second))
		defer a.Close()
		if _, err := a.Read(make([]byte, 256)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v, want the deadline exceeded", err)
		}
	})
	t.Run("cancelled, the reply is there", func(t *testing.T) {
		tg, s, _ := answered(t, time.Second, 0)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var r result.Record
		tg.complete(ctx, &r, s.at, s, nil)
		if r.Outcome != result.Error || r.Reason != result.ReasonCanceled {
			t.Fatalf("record %v/%q, want error/%q: a cancelled run ends what it has not read", r.Outcome, r.Reason, result.ReasonCanceled)
		}
	})
}

// The kernel stamps a reply on the wall clock; the request's deadline and
// end are on the monotonic one. arrivalAt takes the stamp's age from the
// wall reading taken with the read, so a step of the wall clock since the
// window started (here a minute, as a time service might set it) moves
// nothing: a reply that arrived 5 ms before the read ended 5 ms before it.
func TestArrivalAtIgnoresWallClockSteps(t *testing.T) {
	start := time.Now()
	deadline := start.Add(250 * time.Millisecond)
	now := start.Add(200 * time.Millisecond) // the read, on the monotonic clock
	for _, step := range []time.Duration{0, time.Minute, 50 * time.Millisecond, -time.Minute} {
		wall := now.Round(0).Add(step) // the wall clock as the read saw it, stepped
		stamp := wall.Add(-5 * time.Millisecond)
		at := arrivalAt(now, wall, stamp)
		if got := at.Sub(start); got != 195*time.Millisecond {
			t.Errorf("step %v: arrival %v after the start, want 195ms", step, got)
		}
		if at.After(deadline) {
			t.Errorf("step %v: an arrival 195 ms after the send judged after the 250 ms deadline", step)
		}
	}
	// A stamp after the read's own wall reading (the clock stepped back in
	// between) is an arrival at the read, never later.
	if at := arrivalAt(now, now.Round(0), now.Round(0).Add(time.Second)); !at.Equal(now) {
		t.Errorf("a stamp a second after the read: arrival %v after the start, want the read's %v", at.Sub(start), now.Sub(start))
	}
}
