package result

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Outcome is how one request ended.
type Outcome uint8

// The outcomes of a request. Every scheduled arrival ends in exactly one.
const (
	// Unfinished is the zero value: the request was sent but never
	// classified. A row counts such records in lost; it is always a bug.
	Unfinished Outcome = iota
	// OK: the service answered 200.
	OK
	// Refused: the service answered 503.
	Refused
	// Gaveup: no complete answer within the caller's timeout.
	Gaveup
	// Error: anything else (reset, connection refused, malformed reply,
	// other status, local resource exhaustion); Record.Reason says which.
	Error
	// NotSent: the arrival was due but the generator did not send it (the
	// in-flight cap was full, or the run was cancelled first).
	NotSent
)

// String returns the outcome's name as used in CSV and JSON.
func (o Outcome) String() string {
	switch o {
	case Unfinished:
		return "unfinished"
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case Gaveup:
		return "gaveup"
	case Error:
		return "error"
	case NotSent:
		return "not_sent"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText encodes the outcome as its name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an outcome's name as String writes it.
func (o *Outcome) UnmarshalText(b []byte) error {
	for c := Unfinished; c <= NotSent; c++ {
		if c.String() == string(b) {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("outcome %q is not known: want ok, refused, gaveup, error, not_sent or unfinished", b)
}

// Reasons recorded with Error and NotSent outcomes (and Gaveup, to say in
// which phase the caller gave up).
const (
	ReasonConnRefused   = "conn_refused"  // nothing listening: ECONNREFUSED
	ReasonReset         = "reset"         // ECONNRESET or EPIPE
	ReasonEOF           = "eof"           // closed before a complete reply
	ReasonMalformed     = "malformed"     // the reply is not HTTP/1.x
	ReasonEMFILE        = "emfile"        // out of file descriptors (EMFILE/ENFILE)
	ReasonEADDRNOTAVAIL = "eaddrnotavail" // out of ephemeral ports
	ReasonOther         = "other"         // any other local or network error
	ReasonCanceled      = "canceled"      // the run was cancelled
	ReasonInFlightCap   = "inflight_cap"  // not sent: the in-flight cap was full
	ReasonClientBusy    = "client_busy"   // not sent: every client worker was busy (loadrun.Open.ClientWorkers)
	ReasonBreakerOpen   = "breaker_open"  // not sent: the retrying client's circuit breaker was open (package retry)
	ReasonDialTimeout   = "dial_timeout"  // gave up while connecting
	ReasonWriteTimeout  = "write_timeout" // gave up while sending
	ReasonReadTimeout   = "read_timeout"  // gave up waiting for the reply
	ReasonStatusPrefix  = "status_"       // followed by the code, e.g. status_500
)

// Record is what happened to one scheduled arrival. Times are offsets from
// the start of the window. For NotSent records Sent and End equal Intended.
// QueueWaitMS and ServiceMS are the lab's own X-Queue-Wait-Ms and
// X-Service-Ms headers, or -1 when the reply did not carry them.
type Record struct {
	Window      int
	Seq         int
	Intended    time.Duration // when the schedule said to send
	Sent        time.Duration // when the generator started connecting
	End         time.Duration // when the reply was complete, or the caller stopped
	Outcome     Outcome
	Status      int    // HTTP status, 0 when there was none
	Reason      string // see the Reason constants; empty for ok and refused
	QueueWaitMS float64
	ServiceMS   float64
	// Attempt is 0 for a request's first attempt and n for its n-th
	// retry (a retrying client, package retry); without retries every
	// record is a first attempt. Request is, for a retry, the Seq of its
	// request's first attempt, and is not read for a first attempt (which
	// is its own request): use LogicalSeq.
	Attempt int
	Request int
	Class   Class // the criticality the request carried (X-Criticality)
}

// Class is a request's criticality, sent in its X-Criticality header; the
// lab's door may shed by it (package admit). The zero value is Default,
// which a request without the header has.
type Class uint8

// The classes, most to least important to keep.
const (
	Default Class = iota
	Critical
	Sheddable
)

// Classes lists the classes in the order rows and samples list them.
func Classes() []Class { return []Class{Critical, Default, Sheddable} }

// String names the class as the header, the CSV and JSON spell it.
func (c Class) String() string {
	switch c {
	case Default:
		return "default"
	case Critical:
		return "critical"
	case Sheddable:
		return "sheddable"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText encodes the class as its name.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a class's name as String writes it.
func (c *Class) UnmarshalText(b []byte) error {
	for _, k := range Classes() {
		if k.String() == string(b) {
			*c = k
			return nil
		}
	}
	return fmt.Errorf("class %q is not known: want critical, default or sheddable", b)
}

// LogicalSeq is the Seq of the first attempt of the request r is an
// attempt of: r's own for a first attempt, Request for a retry.
func (r Record) LogicalSeq() int {
	if r.Attempt == 0 {
		return r.Seq
	}
	return r.Request
}

// Logical folds a window's attempt records into one record per logical
// request, in the order of their first attempts, for Metrics: the first
// attempt's Seq, Intended and Sent, the last attempt's End, Outcome,
// Status, Reason and lab headers, and Attempt the last attempt's number
// (so a request's attempts sent are Attempt + 1). Records of a client
// that did not retry (every Attempt 0) are returned as they are. The
// records may come in any order; attempts of one request are told apart
// by Request and ordered by Attempt.
func Logical(records []Record) []Record {
	retried := false
	for i := range records {
		if records[i].Attempt > 0 {
			retried = true
			break
		}
	}
	if !retried {
		return records
	}
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b Record) int {
		if c := cmp.Compare(a.Window, b.Window); c != 0 {
			return c
		}
		if c := cmp.Compare(a.LogicalSeq(), b.LogicalSeq()); c != 0 {
			return c
		}
		return cmp.Compare(a.Attempt, b.Attempt)
	})
	out := make([]Record, 0, len(sorted))
	for _, r := range sorted {
		if n := len(out); n > 0 && out[n-1].Window == r.Window && out[n-1].Seq == r.LogicalSeq() {
			l := &out[n-1]
			l.End, l.Outcome, l.Status, l.Reason = r.End, r.Outcome, r.Status, r.Reason
			l.QueueWaitMS, l.ServiceMS, l.Attempt = r.QueueWaitMS, r.ServiceMS, r.Attempt
			continue
		}
		r.Seq, r.Request = r.LogicalSeq(), 0
		out = append(out, r)
	}
	return out
}

// Latency is the time from the intended send to the end: what a caller who
// wanted to send at Intended experienced. It is zero for NotSent. It is
// taken between the times in whole microseconds, as the records' CSV and
// the store keep them, so a row folded from records read back from
// either equals the row folded from the generator's own, exactly.
func (r Record) Latency() time.Duration {
	if r.Outcome == NotSent {
		return 0
	}
	return r.End.Truncate(time.Microsecond) - r.Intended.Truncate(time.Microsecond)
}

// Lag is how late the generator was in sending: Sent − Intended, in
// whole microseconds as Latency is.
func (r Record) Lag() time.Duration {
	if r.Outcome == NotSent {
		return 0
	}
	return r.Sent.Truncate(time.Microsecond) - r.Intended.Truncate(time.Microsecond)
}

// CSVHeader returns the column names WriteCSV writes on its first line; the
// package doc defines each.
func CSVHeader() []string {
	return []string{"window", "seq", "intended_ms", "sent_ms", "end_ms", "latency_ms", "outcome", "status", "reason", "queue_wait_ms", "service_ms", "request", "attempt", "class"}
}

// WriteCSV writes records as CSV with a header line; the columns are listed
// in the package doc. It writes the header even when records is empty.
func WriteCSV(w io.Writer, records []Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader()); err != nil {
		return err
	}
	if err := AppendCSV(cw, records); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// AppendCSV writes records as CSV rows without a header, for callers that
// stream windows into one file.
func AppendCSV(cw *csv.Writer, records []Record) error {
	row := make([]string, len(CSVHeader()))
	for _, r := range records {
		row[0] = strconv.Itoa(r.Window)
		row[1] = strconv.Itoa(r.Seq)
		row[2] = fmtMS(r.Intended)
		if r.Outcome == NotSent {
			row[3], row[4], row[5] = "", "", ""
		} else {
			row[3] = fmtMS(r.Sent)
			row[4] = fmtMS(r.End)
			row[5] = fmtMS(r.Latency())
		}
		row[6] = r.Outcome.String()
		row[7] = ""
		if r.Status != 0 {
			row[7] = strconv.Itoa(r.Status)
		}
		row[8] = r.Reason
		row[9] = fmtOptMS(r.QueueWaitMS)
		row[10] = fmtOptMS(r.ServiceMS)
		row[11] = strconv.Itoa(r.LogicalSeq())
		row[12] = strconv.Itoa(r.Attempt)
		row[13] = r.Class.String()
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	return nil
}

// fmtMS formats a duration as milliseconds with microsecond precision.
func fmtMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 3, 64)
}

func fmtOptMS(v float64) string {
	if v < 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
