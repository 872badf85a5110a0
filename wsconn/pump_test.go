package wsconn

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestPump runs Pump over a real websocket on loopback for each way a
// connection ends, and checks what the client read and how it was closed.
func TestPump(t *testing.T) {
	cases := []struct {
		name string
		// prepare fills the queue before the pump starts and may cancel
		// the context or close gone.
		prepare   func(q *Queue, cancel func(), gone chan struct{})
		wantMsgs  []string
		wantCode  int // the close frame's code; 0: none (socket closed)
		wantFrame bool
	}{
		// Messages are written in order, then the close frame End names.
		{"end after the queued", func(q *Queue, _ func(), _ chan struct{}) {
			q.Send([]byte("a"), "")
			q.Send([]byte("b"), "")
			q.End(websocket.CloseNormalClosure, "bye")
			q.Send([]byte("c"), "") // after End: not sent
		}, []string{"a", "b"}, websocket.CloseNormalClosure, true},
		// Kick drops what waits and closes at once.
		{"kick", func(q *Queue, _ func(), _ chan struct{}) {
			q.Send([]byte("a"), "")
			q.Kick(websocket.ClosePolicyViolation, "out")
		}, nil, websocket.ClosePolicyViolation, true},
		// A client that lets more than the limit (3) wait is dropped with
		// CloseTooSlow and sent nothing more.
		{"too slow", func(q *Queue, _ func(), _ chan struct{}) {
			for i := range 4 {
				q.Send(fmt.Appendf(nil, "%d", i), "too slow")
			}
		}, nil, CloseTooSlow, true},
		// The server stopping closes with 1001 going away.
		{"server stops", func(_ *Queue, cancel func(), _ chan struct{}) { cancel() }, nil, websocket.CloseGoingAway, true},
		// The client gone: no close frame, the socket is closed.
		{"client gone", func(_ *Queue, _ func(), gone chan struct{}) { close(gone) }, nil, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ended := make(chan bool, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				up := websocket.Upgrader{}
				ws, err := up.Upgrade(w, r, nil)
				if err != nil {
					return
				}
				q := NewQueue(3)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				gone := make(chan struct{})
				c.prepare(q, cancel, gone)
				framed := Pump(ctx, ws, q, Config{WriteWait: 5 * time.Second, PingPeriod: time.Hour}, gone)
				if !framed {
					ws.Close()
				}
				ended <- framed
			}))
			defer srv.Close()
			conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var got []string
			code := 0
			for {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, data, err := conn.ReadMessage()
				if err != nil {
					if ce, ok := err.(*websocket.CloseError); ok {
						code = ce.Code
					}
					break
				}
				got = append(got, string(data))
			}
			if framed := <-ended; framed != c.wantFrame {
				t.Errorf("Pump reported a close frame %v, want %v", framed, c.wantFrame)
			}
			if !slices.Equal(got, c.wantMsgs) || (c.wantFrame && code != c.wantCode) || (!c.wantFrame && code != 0 && code != websocket.CloseAbnormalClosure) {
				t.Errorf("read %q and close code %d, want %q and %d", got, code, c.wantMsgs, c.wantCode)
			}
		})
	}
}

// TestPumpPings checks that an idle connection is pinged every PingPeriod.
func TestPumpPings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		q := NewQueue(1)
		time.AfterFunc(250*time.Millisecond, func() { q.End(websocket.CloseNormalClosure, "") })
		Pump(context.Background(), ws, q, Config{WriteWait: 5 * time.Second, PingPeriod: 20 * time.Millisecond}, nil)
	}))
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pings := 0
	conn.SetPingHandler(func(string) error { pings++; return nil })
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("read: %v, want a normal close", err)
	}
	if pings < 2 {
		t.Errorf("%d pings in 250 ms at one per 20 ms, want several", pings)
	}
}
