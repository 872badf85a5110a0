package loadrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"capacitylab/result"
)

// maxBody bounds how much of a reply body is read; a longer one is an error.
const maxBody = 1 << 20

// Target is where requests go: one fresh TCP connection per request,
// carrying one hand-written HTTP/1.1 GET with Connection: close. Build one
// with NewTarget.
type Target struct {
	addr     string
	addrPort netip.AddrPort // addr when it is an IP literal; dialled without a lookup
	sa       *sockaddr      // addrPort as connect(2) takes it
	request  []byte
	classed  *[3][]byte // request with X-Criticality for each result.Class (forClass)
	timeout  time.Duration
	bufs     *sync.Pool // of *[maxHead]byte, the reply readers' scratch buffers
	// queueHeader is the reply header read into Record.QueueWaitMS, lower
	// case: defaultQueueHeader (the lab's X-Queue-Wait-Ms) unless
	// WithQueueHeader named another.
	queueHeader string
}

// NewTarget parses an http:// URL (host:port and optional path) and returns
// a Target whose callers give up after timeout (DefaultTimeout when 0).
func NewTarget(rawURL string, timeout time.Duration) (Target, error) {
	if timeout == 0 {
		timeout = result.DefaultTimeout
	}
	if err := result.CheckTimeout(timeout); err != nil {
		return Target{}, err
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
	head := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: capacitylab-load\r\nConnection: close\r\n"
	req := head + "\r\n"
	var classed [3][]byte
	for _, c := range result.Classes() {
		classed[c] = []byte(head + "X-Criticality: " + c.String() + "\r\n\r\n")
	}
	ap, _ := netip.ParseAddrPort(host) // not an IP literal: resolved at each dial
	bufs := &sync.Pool{New: func() any { return new([maxHead]byte) }}
	sa := newSockaddr(ap)
	return Target{addr: host, addrPort: ap, sa: &sa, request: []byte(req), classed: &classed, timeout: timeout, bufs: bufs, queueHeader: defaultQueueHeader}, nil
}

// forClass returns t sending its request with X-Criticality: c (a window
// whose arrivals carry classes, Open.Classes, sends every one with it).
func (t Target) forClass(c result.Class) Target {
	if t.classed != nil && int(c) < len(t.classed) {
		t.request = t.classed[c]
	}
	return t
}

// WithQueueHeader returns t reading each reply's queue wait (Record.QueueWaitMS,
// milliseconds, a number ≥ 0) from the header name instead of the lab's
// X-Queue-Wait-Ms, so any service can report how long a request queued.
// The name is matched ignoring case, as the lab's is.
func (t Target) WithQueueHeader(name string) (Target, error) {
	if name == "" {
		return t, errors.New("queue header is empty: want a header name such as X-Queue-Wait-Ms")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return t, fmt.Errorf("queue header %q is not a header name: want letters, digits and -, e.g. X-Queue-Wait-Ms", name)
		}
	}
	t.queueHeader = strings.ToLower(name)
	return t, nil
}

// Addr is the host:port requests connect to.
func (t Target) Addr() string { return t.addr }

// Timeout is the caller's patience.
func (t Target) Timeout() time.Duration { return t.timeout }

// do performs one request and fills in r's Sent, End, Outcome, Status,
// Reason and the lab's headers. start is the window's start; onSent is
// called at the actual send, before connecting.
func (t Target) do(ctx context.Context, r *result.Record, start time.Time, onSent func()) {
	t.complete(ctx, r, start, t.begin(r, start, onSent), onSent)
}

// send is a request begin started.
type send struct {
	taken bool      // begin took the send time and connected: at, fd and err are set
	at    time.Time // the actual send: Record.Sent
	fd    int       // the socket begin is connecting, or -1
	err   error     // begin's connect failed at once
	wrote int       // bytes of the request begin already wrote
}

// begin starts a request. For a target given as an IP address (on Linux)
// it takes the actual send time and issues a non-blocking connect(2) at
// once on a new socket, so that Sent is when the connection attempt really
// left even if the goroutine that completes the request runs later. For
// other targets it does nothing: complete takes the send time as it starts
// dialling.
func (t Target) begin(r *result.Record, start time.Time, onSent func()) send {
	if !directConnect || !t.addrPort.IsValid() {
		return send{fd: -1}
	}
	s := send{taken: true, at: time.Now(), fd: -1}
	r.Sent = s.at.Sub(start)
	if onSent != nil {
		onSent()
	}
	s.fd, s.err = connectStart(t.sa)
	if s.err == nil {
		if s.wrote, s.err = writeEarly(s.fd, t.request); s.err != nil {
			s.fd = -1 // writeEarly closed it
		}
	}
	return s
}

// complete finishes a request begin started: it takes the send time (when
// begin did not) and connects, or waits for begin's connect, then writes
// the request, reads the reply and fills in r. onSent is called when it
// takes the send time. It returns the reply's Retry-After (0 when it had
// none), for a retrying client.
func (t Target) complete(ctx context.Context, r *result.Record, start time.Time, s send, onSent func()) (retryAfter time.Duration) {
	r.QueueWaitMS, r.ServiceMS = -1, -1
	if !s.taken {
		s.at = time.Now()
		r.Sent = s.at.Sub(start)
		if onSent != nil {
			onSent()
		}
	}
	deadline := s.at.Add(t.timeout)
	finish := func(o result.Outcome, reason string) {
		r.End = time.Since(start)
		r.Outcome, r.Reason = o, reason
	}
	if s.err != nil {
		finish(classify(ctx, s.err, result.ReasonDialTimeout, result.ReasonOther))
		return
	}

	buf := t.buffer()
	defer func() {
		if t.bufs != nil {
			t.bufs.Put(buf)
		}
	}()
	var rep reply
	var ph phase
	var err error
	var arrived *arrivalReader
	if s.fd >= 0 {
		arrived = newArrivalReader(ctx, s.fd, deadline)
		defer arrived.Close()
		rep, ph, err = t.exchangeBegun(arrived, s.wrote, buf[:])
	} else {
		rep, ph, err = t.exchange(ctx, deadline, buf[:])
	}
	r.Status = rep.status
	if err != nil {
		timeoutReason, otherReason := ph.reasons()
		finish(classify(ctx, err, timeoutReason, otherReason))
		return
	}
	// A reply read after the caller's give-up time (its goroutine got a
	// processor late) counts by when it arrived: a caller gave up on one
	// that arrived after that time.
	if arrived != nil && arrived.late() {
		finish(result.Gaveup, result.ReasonReadTimeout)
		return
	}
	r.QueueWaitMS, r.ServiceMS = rep.queueWaitMS, rep.serviceMS
	switch rep.status {
	case http.StatusOK:
		finish(result.OK, "")
	case http.StatusServiceUnavailable:
		finish(result.Refused, "")
	default:
		finish(result.Error, result.ReasonStatusPrefix+strconv.Itoa(rep.status))
	}
	// A whole reply came: it ended when its last bytes reached the socket,
	// which the kernel stamped, not when this goroutine got to read them.
	// (The stamp is put on the monotonic clock as it is read; one that
	// still falls outside the request's own span is not used.)
	if arrived != nil {
		if at := arrived.arrival(); !at.IsZero() {
			if end := at.Sub(start); end >= r.Sent && end <= r.End {
				r.End = end
			}
		}
	}
	return rep.retryAfter
}

// phase is the step of a request that failed: it names the reasons
// classify gives.
type phase int

const (
	phaseDial phase = iota
	phaseWrite
	phaseRead
)

// reasons returns the reason for a give-up in this phase and for an error
// of no known kind.
func (p phase) reasons() (timeout, other string) {
	switch p {
	case phaseDial:
		return result.ReasonDialTimeout, result.ReasonOther
	case phaseWrite:
		return result.ReasonWriteTimeout, result.ReasonOther
	}
	return result.ReasonReadTimeout, result.ReasonMalformed
}

// exchange dials the target, writes the request and reads the reply, all
// by deadline; cancelling ctx ends it at once.
func (t Target) exchange(ctx context.Context, deadline time.Time, buf []byte) (reply, phase, error) {
	c, err := t.dial(ctx, deadline)
	if err != nil {
		return reply{}, phaseDial, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := c.SetDeadline(deadline); err != nil {
		return reply{}, phaseDial, err
	}
	if _, err := c.Write(t.request); err != nil {
		return reply{}, phaseWrite, err
	}
	rep, err := readReply(c, buf, t.queueHeader)
	return rep, phaseRead, err
}

// exchangeBegun finishes a request on the socket begin connected and
// wrote wrote bytes of the request to: it waits for the connect and
// writes the rest when begin could not, then reads the reply.
func (t Target) exchangeBegun(a *arrivalReader, wrote int, buf []byte) (reply, phase, error) {
	if wrote < len(t.request) {
		f, err := a.file()
		if err != nil {
			return reply{}, phaseDial, err
		}
		if err := connectWait(f); err != nil {
			return reply{}, phaseDial, err
		}
		if _, err := f.Write(t.request[wrote:]); err != nil {
			return reply{}, phaseWrite, err
		}
	}
	rep, err := readReply(a, buf, t.queueHeader)
	return rep, phaseRead, err
}

// dial connects to the target, giving up at deadline.
func (t Target) dial(ctx context.Context, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline}
	if t.addrPort.IsValid() {
		c, err := d.DialTCP(ctx, "tcp", netip.AddrPort{}, t.addrPort)
		if err != nil {
			return nil, err // not a nil *TCPConn in a non-nil net.Conn
		}
		return c, nil
	}
	return d.DialContext(ctx, "tcp", t.addr)
}

// buffer returns a scratch buffer for reading one reply.
func (t Target) buffer() *[maxHead]byte {
	if t.bufs == nil {
		return new([maxHead]byte)
	}
	return t.bufs.Get().(*[maxHead]byte)
}

// classify maps a failed connect, write or read to an outcome and reason.
// timeoutReason names the phase for a give-up; otherReason is used for
// errors that are none of the known kinds.
func classify(ctx context.Context, err error, timeoutReason, otherReason string) (result.Outcome, string) {
	if ctx.Err() != nil {
		return result.Error, result.ReasonCanceled
	}
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return result.Gaveup, timeoutReason
	case errors.Is(err, syscall.ECONNREFUSED):
		return result.Error, result.ReasonConnRefused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return result.Error, result.ReasonReset
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return result.Error, result.ReasonEMFILE
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return result.Error, result.ReasonEADDRNOTAVAIL
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return result.Error, result.ReasonEOF
	}
	return result.Error, otherReason
}

// Do sends one request now and returns its record, with times measured from
// the call. It is for one-off probes such as cmd/load's --check; windows
// use Open and Closed.
func (t Target) Do(ctx context.Context) result.Record {
	var r result.Record
	t.do(ctx, &r, time.Now(), nil)
	return r
}
