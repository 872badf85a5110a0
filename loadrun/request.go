package loadrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"
)

// DefaultTimeout is how long a caller waits, from its actual send, for a
// complete answer (connect, write and read together) before giving up.
const DefaultTimeout = 2 * time.Second

// MaxTimeout caps the caller timeout.
const MaxTimeout = 60 * time.Second

// maxBody bounds how much of a reply body is read; a longer one is an error.
const maxBody = 1 << 20

// Target is where requests go: one fresh TCP connection per request,
// carrying one hand-written HTTP/1.1 GET with Connection: close. Build one
// with NewTarget.
type Target struct {
	addr    string
	request []byte
	timeout time.Duration
}

// NewTarget parses an http:// URL (host:port and optional path) and returns
// a Target whose callers give up after timeout (DefaultTimeout when 0).
func NewTarget(rawURL string, timeout time.Duration) (Target, error) {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < 0 || timeout > MaxTimeout {
		return Target{}, fmt.Errorf("timeout %v is not allowed: want more than 0 and at most %v", timeout, MaxTimeout)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return Target{}, fmt.Errorf("target %q is not allowed: want http://host:port[/path]", rawURL)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	path := u.RequestURI()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: capacitylab-load\r\nConnection: close\r\n\r\n"
	return Target{addr: host, request: []byte(req), timeout: timeout}, nil
}

// Addr is the host:port requests connect to.
func (t Target) Addr() string { return t.addr }

// Timeout is the caller's patience.
func (t Target) Timeout() time.Duration { return t.timeout }

// do performs one request and fills in r's Sent, End, Outcome, Status,
// Reason and the lab's headers. start is the window's start; onSent is
// called at the actual send, before connecting.
func (t Target) do(ctx context.Context, r *Record, start time.Time, onSent func()) {
	r.QueueWaitMS, r.ServiceMS = -1, -1
	sentAt := time.Now()
	r.Sent = sentAt.Sub(start)
	if onSent != nil {
		onSent()
	}
	deadline := sentAt.Add(t.timeout)
	finish := func(o Outcome, reason string) {
		r.End = time.Since(start)
		r.Outcome, r.Reason = o, reason
	}

	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		finish(classify(ctx, err, ReasonDialTimeout, ReasonOther))
		return
	}
	defer conn.Close()
	// Cancelling the run unblocks this request at once; the record says so.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		finish(classify(ctx, err, ReasonWriteTimeout, ReasonOther))
		return
	}
	if _, err := conn.Write(t.request); err != nil {
		finish(classify(ctx, err, ReasonWriteTimeout, ReasonOther))
		return
	}
	br := bufio.NewReaderSize(conn, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		finish(classify(ctx, err, ReasonReadTimeout, ReasonMalformed))
		return
	}
	n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	if err == nil && n > maxBody {
		err = fmt.Errorf("body longer than %d bytes", maxBody)
	}
	if err != nil {
		finish(classify(ctx, err, ReasonReadTimeout, ReasonMalformed))
		r.Status = resp.StatusCode
		return
	}
	r.Status = resp.StatusCode
	r.QueueWaitMS = headerMS(resp.Header, "X-Queue-Wait-Ms")
	r.ServiceMS = headerMS(resp.Header, "X-Service-Ms")
	switch resp.StatusCode {
	case http.StatusOK:
		finish(OK, "")
	case http.StatusServiceUnavailable:
		finish(Refused, "")
	default:
		finish(Error, ReasonStatusPrefix+strconv.Itoa(resp.StatusCode))
	}
}

// classify maps a failed connect, write or read to an outcome and reason.
// timeoutReason names the phase for a give-up; otherReason is used for
// errors that are none of the known kinds.
func classify(ctx context.Context, err error, timeoutReason, otherReason string) (Outcome, string) {
	if ctx.Err() != nil {
		return Error, ReasonCanceled
	}
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return Gaveup, timeoutReason
	case errors.Is(err, syscall.ECONNREFUSED):
		return Error, ReasonConnRefused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return Error, ReasonReset
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return Error, ReasonEMFILE
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return Error, ReasonEADDRNOTAVAIL
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return Error, ReasonEOF
	}
	return Error, otherReason
}

// headerMS reads a decimal-milliseconds header, or -1 when absent or bad.
func headerMS(h http.Header, name string) float64 {
	v := h.Get(name)
	if v == "" {
		return -1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return -1
	}
	return f
}

// Do sends one request now and returns its record, with times measured from
// the call. It is for one-off probes such as cmd/load's --check; windows
// use Open and Closed.
func (t Target) Do(ctx context.Context) Record {
	var r Record
	t.do(ctx, &r, time.Now(), nil)
	return r
}
