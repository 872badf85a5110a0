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
	// ReadTimeout is how long the lab waits for a complete request from
	// when it accepted the connection (the door, or with ACCEPT=workers
	// the worker). A silent or slow caller is then counted in
	// bad_by.timeout.
	ReadTimeout = 1 * time.Second
	// WriteTimeout bounds writing a response to a caller that does not read.
	WriteTimeout = 1 * time.Second
	// LingerTimeout is how long a refused or bad connection is drained after
	// the answer, so closing it never resets the caller's connection.
	LingerTimeout = 1 * time.Second
	// MaxReading bounds the connections the door reads at once, each on
	// a goroutine of its own, and answers when refused or bad (each lives
	// at most ReadTimeout + WriteTimeout + LingerTimeout); past it the
	// door waits, and callers wait in the kernel's accept backlog.
	MaxReading = 1024
	// MaxRefusing bounds the refusals of dropped connections (sojourn) and,
	// with ACCEPT=workers, the 400s being answered at once (each lives at
	// most WriteTimeout + LingerTimeout).
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
// which must be at least MaxHeaderBytes long, by the connection's read
// deadline, and returns how it ended, why when it is garbage, and the
// request's class (X-Criticality). It allocates nothing.
func readRequest(c net.Conn, buf []byte) (outcome, string, admit.Class) {
	n := 0
	for {
		m, err := c.Read(buf[n:MaxHeaderBytes])
		n += m
		if bad := checkStart(buf[:n]); bad != "" {
			return reqGarbage, bad, admit.Normal
		}
		if end, sep := headerEnd(buf[:n]); end >= 0 {
			return readBody(c, buf, n, end, end+sep)
		}
		if n == MaxHeaderBytes {
			return reqGarbage, "request headers too large", admit.Normal
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return reqTimeout, "", admit.Normal
			}
			return reqGone, "", admit.Normal
		}
	}
}

// CriticalityHeader is the request header that says how critical a
// request is: critical, default or sheddable (in any case); absent, or
// any other value, is default. With POLICY's classes=on the door sheds by
// it (package admit); the stats count each class either way.
const CriticalityHeader = "X-Criticality"

// criticality reads an X-Criticality value as admit's class: critical
// (admit.Critical), sheddable (admit.Sheddable), and default or anything
// else (admit.Normal).
func criticality(v []byte) admit.Class {
	v = bytes.TrimSpace(v)
	switch {
	case bytes.EqualFold(v, []byte("critical")):
		return admit.Critical
	case bytes.EqualFold(v, []byte("sheddable")):
		return admit.Sheddable
	}
	return admit.Normal
}

// className names a class as X-Criticality and the stats spell it:
// admit.Normal is default.
func className(c admit.Class) string {
	if c == admit.Normal {
		return "default"
	}
	return c.String()
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

// readBody finds Content-Length and X-Criticality (the last given, if
// more than one) among the headers in buf[:end], and reads and discards
// that many body bytes, some of which may already be in buf[bodyStart:n].
func readBody(c net.Conn, buf []byte, n, end, bodyStart int) (outcome, string, admit.Class) {
	length := 0
	class := admit.Normal
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
			return reqGarbage, "Transfer-Encoding is not supported: send Content-Length", class
		case bytes.EqualFold(name, []byte("Content-Length")):
			v, err := strconv.Atoi(string(bytes.TrimSpace(line[colon+1:])))
			if err != nil || v < 0 {
				return reqGarbage, "Content-Length is not a whole number", class
			}
			if v > MaxBodyBytes {
				return reqGarbage, "body too large", class
			}
			length = v
		case bytes.EqualFold(name, []byte(CriticalityHeader)):
			class = criticality(line[colon+1:])
		}
	}
	left := length - (n - bodyStart)
	for left > 0 {
		m, err := c.Read(buf[:min(left, len(buf))])
		left -= m
		if left > 0 && err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return reqTimeout, "", class
			}
			return reqGone, "", class
		}
	}
	return reqOK, "", class
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
