package loadrun

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"capacitylab/result"
)

// replyCases are HTTP replies and what readReply must make of them. wantErr
// is "" for success, "eof" for io.ErrUnexpectedEOF and "malformed" for a
// *malformedError.
var replyCases = []struct {
	name    string
	in      string
	status  int // wanted status, also on a body error
	queue   float64
	service float64
	wantErr string
}{
	// The lab's own reply: Content-Length and both timing headers.
	{"lab ok", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\nX-Queue-Wait-Ms: 0.5\r\nX-Service-Ms: 1.25\r\n\r\nok\n", 200, 0.5, 1.25, ""},
	// The lab refusing at its door.
	{"lab refused", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nX-Queue-Wait-Ms: 0\r\n\r\nfull\n", 503, 0, -1, ""},
	// Header names in any case, blanks around values.
	{"header case and blanks", "HTTP/1.1 200 OK\r\ncontent-LENGTH:  2 \r\nx-queue-wait-ms:\t7\t\r\nX-SERVICE-MS: 20.5\r\n\r\nhi", 200, 7, 20.5, ""},
	// Bare LF line endings are accepted, as net/http does.
	{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\nX-Service-Ms: 3\n\nhi", 200, -1, 3, ""},
	// No reason phrase after the code.
	{"no reason phrase", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", 404, -1, -1, ""},
	// HTTP/1.0 without a length: the body runs until the connection closes.
	{"close-delimited body", "HTTP/1.0 200 OK\r\nX-Queue-Wait-Ms: 1\r\n\r\nall of this is body\nand this", 200, 1, -1, ""},
	// Chunked body with an extension and a trailer.
	{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Service-Ms: 2\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n", 200, -1, 2, ""},
	// Chunked wins over a Content-Length sent alongside it.
	{"chunked and length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", 200, -1, -1, ""},
	// 204 has no body whatever its headers say; nothing more is read.
	{"204 no body", "HTTP/1.1 204 No Content\r\nContent-Length: 50\r\n\r\n", 204, -1, -1, ""},
	// A repeated Content-Length with the same value is fine.
	{"same length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", 200, -1, -1, ""},
	// The first of two timing headers counts, as http.Header.Get does.
	{"first header wins", "HTTP/1.1 200 OK\r\nX-Service-Ms: 4\r\nX-Service-Ms: 9\r\nContent-Length: 0\r\n\r\n", 200, -1, 4, ""},
	// Timing headers that are not numbers ≥ 0 read as absent.
	{"bad timing values", "HTTP/1.1 200 OK\r\nX-Queue-Wait-Ms: -1\r\nX-Service-Ms: NaN\r\nContent-Length: 0\r\n\r\n", 200, -1, -1, ""},
	// Another status is returned as it is (the caller calls it an error).
	{"500", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops", 500, -1, -1, ""},
	// Bytes after the Content-Length body are ignored.
	{"trailing garbage", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA", 200, -1, -1, ""},

	// Nothing at all before the close.
	{"empty", "", 0, -1, -1, "eof"},
	// The status line stops short.
	{"cut status line", "HTTP/1.1 20", 0, -1, -1, "eof"},
	// The headers stop short.
	{"cut headers", "HTTP/1.1 200 OK\r\nContent-Len", 0, -1, -1, "eof"},
	// No empty line after the headers.
	{"no end of head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", 0, -1, -1, "eof"},
	// The body is shorter than its Content-Length: the status is kept, the
	// timing headers are not.
	{"cut body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Service-Ms: 1\r\n\r\nshort", 200, -1, -1, "eof"},
	// A chunked body that stops inside a chunk.
	{"cut chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", 200, -1, -1, "eof"},
	// A chunked body without its last chunk.
	{"no last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n", 200, -1, -1, "eof"},

	// Not HTTP at all.
	{"not http", "SSH-2.0-OpenSSH_9.2\r\n", 0, -1, -1, "malformed"},
	// HTTP/2 is not HTTP/1.x.
	{"http/2", "HTTP/2 200\r\n\r\n", 0, -1, -1, "malformed"},
	// A two-digit status.
	{"short status", "HTTP/1.1 20 OK\r\n\r\n", 0, -1, -1, "malformed"},
	// The reason phrase glued to the code.
	{"glued reason", "HTTP/1.1 200OK\r\n\r\n", 0, -1, -1, "malformed"},
	// A status below 100.
	{"status 099", "HTTP/1.1 099 Odd\r\n\r\n", 0, -1, -1, "malformed"},
	// A header line without a colon.
	{"no colon", "HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nhi", 0, -1, -1, "malformed"},
	// A blank inside a header name.
	{"blank in name", "HTTP/1.1 200 OK\r\nContent Length: 2\r\n\r\nhi", 0, -1, -1, "malformed"},
	// A continuation line (obsolete folding) is not accepted.
	{"folded header", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\n\r\n", 0, -1, -1, "malformed"},
	// A Content-Length that is not a number.
	{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nhi", 0, -1, -1, "malformed"},
	// Two different Content-Lengths.
	{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi!", 0, -1, -1, "malformed"},
	// A transfer coding other than chunked.
	{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, -1, -1, "malformed"},
	// A chunk size that is not hexadecimal.
	{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 200, -1, -1, "malformed"},
	// Chunk data longer than its size.
	{"long chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n", 200, -1, -1, "malformed"},
	// A head longer than maxHead.
	{"huge head", "HTTP/1.1 200 OK\r\nX-Pad: " + strings.Repeat("a", maxHead) + "\r\n\r\n", 0, -1, -1, "malformed"},
	// A Content-Length body longer than maxBody.
	{"huge body by length", "HTTP/1.1 200 OK\r\nContent-Length: 1048577\r\n\r\n" + strings.Repeat("b", maxBody+1), 200, -1, -1, "malformed"},
	// A close-delimited body longer than maxBody.
	{"huge body to close", "HTTP/1.0 200 OK\r\n\r\n" + strings.Repeat("b", maxBody+1), 200, -1, -1, "malformed"},
	// A chunked body longer than maxBody.
	{"huge chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n", 200, -1, -1, "malformed"},
}

func TestReadReply(t *testing.T) {
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"data with EOF", iotest.DataErrReader},
	}
	for _, c := range replyCases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				var buf [maxHead]byte
				rep, err := readReply(rd.wrap(strings.NewReader(c.in)), buf[:], defaultQueueHeader)
				if got := errKind(err); got != c.wantErr {
					t.Fatalf("error %v (%s), want %q", err, got, c.wantErr)
				}
				if rep.status != c.status || rep.queueWaitMS != c.queue || rep.serviceMS != c.service {
					t.Errorf("got status %d queue %v service %v, want %d %v %v", rep.status, rep.queueWaitMS, rep.serviceMS, c.status, c.queue, c.service)
				}
			})
		}
	}
}

// errKind names the class of a readReply error for the tables.
func errKind(err error) string {
	var m *malformedError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &m):
		return "malformed"
	}
	return "other: " + err.Error()
}

// TestReadReplyClassified checks that readReply's errors land on the reasons
// the records have always used.
func TestReadReplyClassified(t *testing.T) {
	cases := []struct {
		name    string
		src     io.Reader
		outcome result.Outcome
		reason  string
	}{
		// Malformed replies are errors with reason malformed.
		{"malformed", strings.NewReader("HELLO\r\n\r\n"), result.Error, result.ReasonMalformed},
		// A reply cut short is an error with reason eof.
		{"truncated", strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"), result.Error, result.ReasonEOF},
		// The connection's deadline passing mid-reply is a give-up while reading.
		{"deadline", io.MultiReader(strings.NewReader("HTTP/1.1 200 OK\r\n"), iotest.ErrReader(os.ErrDeadlineExceeded)), result.Gaveup, result.ReasonReadTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf [maxHead]byte
			_, err := readReply(c.src, buf[:], defaultQueueHeader)
			o, r := classify(context.Background(), err, result.ReasonReadTimeout, result.ReasonMalformed)
			if o != c.outcome || r != c.reason {
				t.Errorf("readReply error %v classified %v/%q, want %v/%q", err, o, r, c.outcome, c.reason)
			}
		})
	}
}

// TestReadReplyAllocs shows that reading the lab's reply allocates nothing.
func TestReadReplyAllocs(t *testing.T) {
	in := replyCases[0].in
	var buf [maxHead]byte
	sr := strings.NewReader(in)
	allocs := testing.AllocsPerRun(100, func() {
		sr.Reset(in)
		if _, err := readReply(sr, buf[:], defaultQueueHeader); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("readReply allocated %v times per reply, want 0", allocs)
	}
}

// FuzzReadReply checks that readReply never panics, reads the same however
// the bytes arrive, and never accepts a reply net/http rejects with a
// different status or timing headers.
func FuzzReadReply(f *testing.F) {
	for _, c := range replyCases {
		if len(c.in) < 4096 {
			f.Add(c.in)
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		var buf [maxHead]byte
		rep, err := readReply(strings.NewReader(in), buf[:], defaultQueueHeader)
		rep1, err1 := readReply(iotest.OneByteReader(strings.NewReader(in)), buf[:], defaultQueueHeader)
		if rep != rep1 || errKind(err) != errKind(err1) {
			t.Fatalf("whole: %+v %v; one byte at a time: %+v %v", rep, err, rep1, err1)
		}
		if err != nil {
			if k := errKind(err); k != "eof" && k != "malformed" {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if rep.status < 100 || rep.status > 999 {
			t.Fatalf("status %d accepted", rep.status)
		}
		resp, herr := http.ReadResponse(bufio.NewReader(strings.NewReader(in)), nil)
		if herr != nil {
			return // net/http is stricter in places (header value bytes, for one)
		}
		defer resp.Body.Close()
		if resp.StatusCode != rep.status {
			t.Fatalf("status %d, net/http reads %d", rep.status, resp.StatusCode)
		}
		for name, got := range map[string]float64{"X-Queue-Wait-Ms": rep.queueWaitMS, "X-Service-Ms": rep.serviceMS} {
			want := parseMS([]byte(strings.Trim(resp.Header.Get(name), " \t")))
			if got != want && !(got != got && want != want) {
				t.Fatalf("%s %v, net/http's header reads %v", name, got, want)
			}
		}
	})
}

// A named queue header (Target.WithQueueHeader) is read instead of the
// lab's, in any case, and the lab's is then ignored; reading it allocates
// nothing more than the lab's does.
func TestReadReplyQueueHeader(t *testing.T) {
	in := "HTTP/1.1 200 OK\r\nX-Queue-Wait-Ms: 9\r\nqueue-MS: 2.5\r\nContent-Length: 0\r\n\r\n"
	var buf [maxHead]byte
	rep, err := readReply(strings.NewReader(in), buf[:], "queue-ms")
	if err != nil || rep.queueWaitMS != 2.5 {
		t.Errorf("readReply with queue-ms = %+v, %v; want queue wait 2.5", rep, err)
	}
	if rep, _ := readReply(strings.NewReader(in), buf[:], defaultQueueHeader); rep.queueWaitMS != 9 {
		t.Errorf("readReply with the lab's header = %+v; want queue wait 9", rep)
	}
	sr := strings.NewReader(in)
	allocs := testing.AllocsPerRun(100, func() {
		sr.Reset(in)
		if _, err := readReply(sr, buf[:], "queue-ms"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("readReply with a named header allocated %v times per reply, want 0", allocs)
	}
	tg, err := NewTarget("http://127.0.0.1:1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "Queue Wait", "a:b", "x\x00"} {
		if _, err := tg.WithQueueHeader(bad); err == nil {
			t.Errorf("WithQueueHeader(%q) accepted", bad)
		}
	}
	if tg, err = tg.WithQueueHeader("Queue-MS"); err != nil || tg.queueHeader != "queue-ms" {
		t.Errorf("WithQueueHeader(Queue-MS) = %q, %v", tg.queueHeader, err)
	}
}
