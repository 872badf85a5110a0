package loadrun

import (
	"io"
	"math"
	"strconv"
	"time"
)

// maxHead bounds a reply's head (status line and headers); a longer one is
// malformed. It is also the size of the scratch buffer each request reads
// through.
const maxHead = 8 << 10

// defaultQueueHeader is the header a reply's queue wait is read from
// unless the Target names another (Target.WithQueueHeader): the lab's own,
// lower case as readReply compares it.
const defaultQueueHeader = "x-queue-wait-ms"

// reply is what readReply takes from one HTTP/1.x response.
type reply struct {
	status      int           // 0 until the status line was read
	queueWaitMS float64       // the queue header (X-Queue-Wait-Ms), -1 when absent or not a number ≥ 0
	serviceMS   float64       // X-Service-Ms, likewise
	retryAfter  time.Duration // Retry-After in whole seconds (0 to 3600), 0 when absent or a date
}

// malformedError says why a reply is not acceptable HTTP/1.x. classify
// files it under the read phase's fallback reason (malformed).
type malformedError struct{ what string }

func (e *malformedError) Error() string { return "malformed reply: " + e.what }

func malformed(what string) error { return &malformedError{what: what} }

// replyReader reads one reply from src through buf, a scratch buffer of
// maxHead bytes; buf[r:w] holds bytes read but not yet used.
type replyReader struct {
	src  io.Reader
	buf  []byte
	r, w int
	eof  bool // src returned io.EOF
}

// fill reads more bytes into buf[w:], after moving buf[r:w] to the front
// when it is full. It returns src's error (io.EOF included) when nothing
// was read.
func (rr *replyReader) fill() error {
	if rr.eof {
		return io.EOF
	}
	if rr.w == len(rr.buf) {
		if rr.r == 0 {
			return malformed("head longer than " + strconv.Itoa(maxHead) + " bytes")
		}
		rr.w = copy(rr.buf, rr.buf[rr.r:rr.w])
		rr.r = 0
	}
	for {
		n, err := rr.src.Read(rr.buf[rr.w:])
		rr.w += n
		if err == io.EOF {
			rr.eof = true
		}
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line returns the next line without its "\n" or "\r\n". A reply that
// ends before the line does is an io.ErrUnexpectedEOF.
func (rr *replyReader) line() ([]byte, error) {
	off := 0 // bytes after rr.r already searched
	for {
		for i := rr.r + off; i < rr.w; i++ {
			if rr.buf[i] == '\n' {
				l := rr.buf[rr.r:i]
				rr.r = i + 1
				if n := len(l); n > 0 && l[n-1] == '\r' {
					l = l[:n-1]
				}
				return l, nil
			}
		}
		off = rr.w - rr.r
		if err := rr.fill(); err != nil {
			if err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// discard consumes n bytes of body. It returns io.ErrUnexpectedEOF when the
// reply ends first.
func (rr *replyReader) discard(n int64) error {
	for n > 0 {
		if rr.r == rr.w {
			rr.r, rr.w = 0, 0
			if err := rr.fill(); err != nil {
				if err == io.EOF {
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := min(n, int64(rr.w-rr.r))
		rr.r += int(k)
		n -= k
	}
	return nil
}

// toEOF consumes the rest of a close-delimited body: at most limit bytes,
// more is malformed.
func (rr *replyReader) toEOF(limit int64) error {
	total := int64(rr.w - rr.r)
	for total <= limit {
		rr.r, rr.w = 0, 0
		if err := rr.fill(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		total += int64(rr.w)
	}
	return malformed("body longer than " + strconv.Itoa(maxBody) + " bytes")
}

// readReply reads one HTTP/1.x response from src, using buf (maxHead bytes)
// as scratch. It reads the status line, the headers, and the body to its
// end: Content-Length bytes, chunked, or until the connection closes, and
// never more than maxBody bytes of body. It keeps the status and the lab's
// X-Queue-Wait-Ms and X-Service-Ms headers.
//
// Errors: src's own errors (timeouts, resets) come back as they are; a
// reply that stops short (nothing at all included) is io.ErrUnexpectedEOF;
// anything that is not acceptable HTTP/1.x
// is a *malformedError. When the head was read but the body failed, the
// returned reply still has its status.
func readReply(src io.Reader, buf []byte, queueHeader string) (reply, error) {
	rr := replyReader{src: src, buf: buf}
	rep := reply{queueWaitMS: -1, serviceMS: -1}

	l, err := rr.line()
	if err != nil {
		return rep, err
	}
	status, ok := parseStatusLine(l)
	if !ok {
		return rep, malformed("bad status line")
	}

	contentLength := int64(-1)
	chunked := false
	for {
		l, err := rr.line()
		if err != nil {
			return rep, err
		}
		if len(l) == 0 {
			break
		}
		name, value, ok := splitHeader(l)
		if !ok {
			return rep, malformed("bad header line")
		}
		switch {
		case equalFold(name, "content-length"):
			n, ok := parseContentLength(value)
			if !ok || (contentLength >= 0 && n != contentLength) {
				return rep, malformed("bad Content-Length")
			}
			contentLength = n
		case equalFold(name, "transfer-encoding"):
			if !equalFold(value, "chunked") || chunked {
				return rep, malformed("unsupported Transfer-Encoding")
			}
			chunked = true
		case equalFold(name, queueHeader):
			if rep.queueWaitMS < 0 {
				rep.queueWaitMS = parseMS(value)
			}
		case equalFold(name, "x-service-ms"):
			if rep.serviceMS < 0 {
				rep.serviceMS = parseMS(value)
			}
		case equalFold(name, "retry-after"):
			rep.retryAfter = parseRetryAfter(value)
		}
	}
	rep.status = status

	switch {
	case status < 200 || status == 204 || status == 304:
		// These replies have no body, whatever the headers say.
	case chunked:
		err = rr.chunkedBody()
	case contentLength >= 0:
		err = rr.discard(min(contentLength, maxBody+1))
		if err == nil && contentLength > maxBody {
			err = malformed("body longer than " + strconv.Itoa(maxBody) + " bytes")
		}
	default:
		err = rr.toEOF(maxBody)
	}
	if err != nil {
		rep.queueWaitMS, rep.serviceMS = -1, -1
	}
	return rep, err
}

// chunkedBody consumes a chunked body, its last chunk and any trailers; at
// most maxBody bytes of data.
func (rr *replyReader) chunkedBody() error {
	var total int64
	for {
		l, err := rr.line()
		if err != nil {
			return err
		}
		size, ok := parseChunkSize(l)
		if !ok {
			return malformed("bad chunk size")
		}
		if size == 0 {
			break
		}
		total += size
		if total > maxBody {
			return malformed("body longer than " + strconv.Itoa(maxBody) + " bytes")
		}
		if err := rr.discard(size); err != nil {
			return err
		}
		l, err = rr.line()
		if err != nil {
			return err
		}
		if len(l) != 0 {
			return malformed("chunk longer than its size")
		}
	}
	for { // trailers, up to the empty line
		l, err := rr.line()
		if err != nil {
			return err
		}
		if len(l) == 0 {
			return nil
		}
	}
}

// parseStatusLine accepts "HTTP/1.x NNN" optionally followed by a space and
// a reason phrase.
func parseStatusLine(l []byte) (int, bool) {
	const proto = "HTTP/1."
	if len(l) < len(proto)+1 || string(l[:len(proto)]) != proto || !isDigit(l[len(proto)]) {
		return 0, false
	}
	rest := l[len(proto)+1:]
	if len(rest) == 0 || rest[0] != ' ' {
		return 0, false
	}
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	if len(rest) < 3 || !isDigit(rest[0]) || !isDigit(rest[1]) || !isDigit(rest[2]) || (len(rest) > 3 && rest[3] != ' ') {
		return 0, false
	}
	code := int(rest[0]-'0')*100 + int(rest[1]-'0')*10 + int(rest[2]-'0')
	if code < 100 {
		return 0, false
	}
	return code, true
}

// splitHeader splits "Name: value" and trims blanks around the value. The
// name must be a non-empty token (no blanks, no control characters).
func splitHeader(l []byte) (name, value []byte, ok bool) {
	colon := -1
	for i, c := range l {
		if c == ':' {
			colon = i
			break
		}
		if c <= ' ' || c == 0x7f {
			return nil, nil, false
		}
	}
	if colon <= 0 {
		return nil, nil, false
	}
	value = l[colon+1:]
	for len(value) > 0 && (value[0] == ' ' || value[0] == '\t') {
		value = value[1:]
	}
	for len(value) > 0 && (value[len(value)-1] == ' ' || value[len(value)-1] == '\t') {
		value = value[:len(value)-1]
	}
	return l[:colon], value, true
}

// parseContentLength accepts 1 to 18 decimal digits.
func parseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseChunkSize reads the hexadecimal size at the start of a chunk line,
// ignoring any ";extension".
func parseChunkSize(l []byte) (int64, bool) {
	for i, c := range l {
		if c == ';' || c == ' ' || c == '\t' {
			l = l[:i]
			break
		}
	}
	if len(l) == 0 || len(l) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range l {
		var d byte
		switch {
		case isDigit(c):
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// parseMS reads a decimal number of milliseconds, or -1 when it is not a
// finite number ≥ 0.
func parseMS(v []byte) float64 {
	if len(v) == 0 || len(v) > 32 {
		return -1
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return -1
	}
	return f
}

// equalFold reports whether b equals lower, an ASCII lower-case string,
// ignoring ASCII case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// parseRetryAfter reads Retry-After as whole seconds, 0 to 3600; 0 for
// anything else (an HTTP date, which the lab never sends, included).
func parseRetryAfter(v []byte) time.Duration {
	if len(v) == 0 || len(v) > 4 {
		return 0
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return time.Duration(min(n, 3600)) * time.Second
}
