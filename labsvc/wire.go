package labsvc

import (
	"bytes"
	"net"
	"strconv"
	"time"

	"capacitylab/admit"
)

// Limits of the request side of the wire.
const (
	// MaxHeaderBytes bounds the request line plus headers; more is garbage.
	MaxHeaderBytes = 8 << 10
	// MaxBodyBytes bounds a request body (read and discarded); more is garbage.
	MaxBodyBytes = 1 << 20
	// ReadTimeout is how long a worker waits for a complete request once it
	// has taken the connection. A silent or slow caller holds a worker at
	// most this long and is then counted in bad_by.timeout.
	ReadTimeout = 1 * time.Second
	// WriteTimeout bounds writing a response to a caller that does not read.
	WriteTimeout = 1 * time.Second
	// RefuseReadTimeout is how long the door waits to read a refused
	// caller's request (once) before answering 503 anyway.
	RefuseReadTimeout = 200 * time.Millisecond
	// LingerTimeout is how long a refused or bad connection is drained after
	// the answer, so closing it never resets the caller's connection.
	LingerTimeout = 1 * time.Second
	// MaxRefusing bounds the refusals being answered at once (each lives at
	// most RefuseReadTimeout + LingerTimeout).
	MaxRefusing = 1024
	// RetryAfter is the Retry-After header (whole seconds) a refused
	// caller is given: every refusal's, admit.RetryAfter.
	RetryAfter = admit.RetryAfter
)

// outcome is how reading one request ended.
type outcome int

const (
	reqOK      outcome = iota
	reqTimeout         // no complete request before the deadline
	reqGone            // the caller closed before sending a complete request
	reqGarbage         // not an HTTP/1.x request, or too large
)

// readRequest reads one HTTP/1.x request (and discards its body) into buf,
// which must be at least MaxHeaderBytes long. It allocates nothing.
func readRequest(c net.Conn, buf []byte, deadline time.Time) (outcome, string) {
	if err := c.SetReadDeadline(deadline); err != nil {
		return reqGone, ""
	}
	n := 0
	for {
		m, err := c.Read(buf[n:MaxHeaderBytes])
		n += m
		if bad := checkStart(buf[:n]); bad != "" {
			return reqGarbage, bad
		}
		if end, sep := headerEnd(buf[:n]); end >= 0 {
			return readBody(c, buf, n, end, end+sep)
		}
		if n == MaxHeaderBytes {
			return reqGarbage, "request headers too large"
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return reqTimeout, ""
			}
			return reqGone, ""
		}
	}
}

func headerEnd(b []byte) (int, int) {
	if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
		return i, 4
	}
	if i := bytes.Index(b, []byte("\n\n")); i >= 0 {
		return i, 2
	}
	return -1, 0
}

// checkStart rejects a request as soon as what has arrived cannot be the
// start of an HTTP/1.x request line, so garbage does not wait for a timeout.
func checkStart(b []byte) string {
	for i, ch := range b {
		if ch == ' ' && i > 0 {
			break
		}
		if ch < 'A' || ch > 'Z' {
			return "request line does not start with a method"
		}
	}
	line := b
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return ""
	}
	line = bytes.TrimSuffix(line[:i], []byte("\r"))
	sp1 := bytes.IndexByte(line, ' ')
	sp2 := bytes.LastIndexByte(line, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 {
		return "request line is not METHOD TARGET VERSION"
	}
	v := line[sp2+1:]
	if !bytes.Equal(v, []byte("HTTP/1.1")) && !bytes.Equal(v, []byte("HTTP/1.0")) {
		return "version is not HTTP/1.0 or HTTP/1.1"
	}
	return ""
}

// readBody finds Content-Length among the headers in buf[:end] and reads
// and discards that many body bytes, some of which may already be in
// buf[bodyStart:n].
func readBody(c net.Conn, buf []byte, n, end, bodyStart int) (outcome, string) {
	length := 0
	hdr := buf[:end]
	for len(hdr) > 0 {
		i := bytes.IndexByte(hdr, '\n')
		var line []byte
		if i < 0 {
			line, hdr = hdr, nil
		} else {
			line, hdr = hdr[:i], hdr[i+1:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		name := line[:colon]
		switch {
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return reqGarbage, "Transfer-Encoding is not supported: send Content-Length"
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, err := strconv.Atoi(string(bytes.TrimSpace(line[colon+1:])))
			if err != nil || v < 0 {
				return reqGarbage, "Content-Length is not a whole number"
			}
			if v > MaxBodyBytes {
				return reqGarbage, "body too large"
			}
			length = v
		}
	}
	left := length - (n - bodyStart)
	for left > 0 {
		m, err := c.Read(buf[:min(left, len(buf))])
		left -= m
		if left > 0 && err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return reqTimeout, ""
			}
			return reqGone, ""
		}
	}
	return reqOK, ""
}

// appendOK appends the complete 200 response carrying the measured times.
func appendOK(b []byte, queueWait, service time.Duration) []byte {
	b = append(b, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nX-Queue-Wait-Ms: "...)
	b = appendMS(b, queueWait)
	b = append(b, "\r\nX-Service-Ms: "...)
	b = appendMS(b, service)
	b = append(b, "\r\nContent-Length: 3\r\n\r\nok\n"...)
	return b
}

// appendMS appends d in milliseconds with three decimals, e.g. "20.117".
func appendMS(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, ms(d), 'f', 3, 64)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// refusedResponse is the whole answer the door gives a caller its policy
// refuses, at arrival or from the queue: admit's refusal, written on the
// wire (admit.Refuse writes the same through net/http).
const refusedResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: " +
	admit.RetryAfter + "\r\nContent-Length: 11\r\n\r\n" + admit.RefusalBody

// badRequest renders the 400 given to garbage.
func badRequest(reason string) string {
	body := "bad request: " + reason + "\n"
	return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// closeGracefully writes msg, half-closes, drains what the caller still
// sends until it closes (or LingerTimeout passes), then closes, so the
// caller reads msg rather than a connection reset.
func closeGracefully(c net.Conn, msg string) {
	_ = c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, _ = c.Write([]byte(msg))
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(LingerTimeout))
	var drain [512]byte
	for {
		if _, err := c.Read(drain[:]); err != nil {
			break
		}
	}
	_ = c.Close()
}
