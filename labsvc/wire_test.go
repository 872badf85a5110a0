package labsvc_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
)

// What the lab answers to what a caller sends, byte for byte on a real
// connection, and how it counts it.
func TestWire(t *testing.T) {
	tests := []struct {
		name    string
		send    string
		status  int    // 0: no answer expected (connection closed)
		body    string // substring of the answer's body
		badKind string // "" if served, else the bad_by field counted
	}{
		// the load generator's request
		{"plain GET", "GET /work HTTP/1.1\r\nHost: lab\r\n\r\n", 200, "ok", ""},
		// HTTP/1.0 and bare LF line endings are accepted
		{"HTTP/1.0 with LF", "GET / HTTP/1.0\n\n", 200, "ok", ""},
		// a body is read and discarded, even in several pieces
		{"POST with body", "POST /x HTTP/1.1\r\nHost: lab\r\ncontent-length: 11\r\n\r\nhello world", 200, "ok", ""},
		// not HTTP at all: answered 400 at once, not after a timeout
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "request line does not start with a method", "garbage"},
		// an HTTP/2 preface is not HTTP/1.x
		{"wrong version", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, "version is not HTTP/1.0 or HTTP/1.1", "garbage"},
		// chunked bodies are not supported
		{"chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Transfer-Encoding", "garbage"},
		// a body beyond MaxBodyBytes
		{"huge body", "POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 400, "body too large", "garbage"},
		// headers beyond MaxHeaderBytes
		{"huge headers", "GET / HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", labsvc.MaxHeaderBytes) + "\r\n\r\n", 400, "too large", "garbage"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := labtest.Serve(t, cfg(1, 0, 0, 0))
			c, err := net.Dial("tcp", l.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			go func() {
				// Send in two pieces to exercise reassembly.
				half := len(tc.send) / 2
				_, _ = io.WriteString(c, tc.send[:half])
				time.Sleep(5 * time.Millisecond)
				_, _ = io.WriteString(c, tc.send[half:])
			}()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) || !resp.Close {
				t.Errorf("answer %d %q (close %v), want %d containing %q with Connection: close", resp.StatusCode, body, resp.Close, tc.status, tc.body)
			}
			st := quiet(t, l.Control, 3*time.Second)
			got := map[string]int64{"timeout": st.BadBy.Timeout, "gone": st.BadBy.Gone, "garbage": st.BadBy.Garbage}
			if tc.badKind == "" {
				if st.Done != 1 || st.Bad != 0 {
					t.Errorf("done=%d bad=%+v, want served", st.Done, st.BadBy)
				}
			} else if got[tc.badKind] != 1 || st.Bad != 1 || st.Done != 0 {
				t.Errorf("done=%d bad_by=%+v, want one %s", st.Done, st.BadBy, tc.badKind)
			}
		})
	}
}
