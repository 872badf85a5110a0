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
	// Cancelled: a hedged request's copy that the client stopped
	// waiting for (closing its connection) because another copy of the
	// same request answered ok first (package hedge). It is never a
	// request's outcome, only a copy's.
	Cancelled
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
	case Cancelled:
		return "cancelled"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText encodes the outcome as its name.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an outcome's name as String writes it.
func (o *Outcome) UnmarshalText(b []byte) error {
	for c := Unfinished; c <= Cancelled; c++ {
		if c.String() == string(b) {
			*o = c
			return nil
		}
	}
	return fmt.Errorf("outcome %q is not known: want ok, refused, gaveup, error, not_sent, cancelled or unfinished", b)
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
	// Sub is, in a fanned-out window (loadrun.Open.Fanout), the index of
	// the sub-request this record belongs to, 0 to k−1; 0 otherwise.
	// Copy is, for a hedged request (package hedge), 0 for the request
	// itself and n for its n-th copy. A record that is not its logical
	// request's first (sub-request 0, copy 0, attempt 0) names that one's
	// Seq in Request.
	Sub  int
	Copy int
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

// LogicalSeq is the Seq of the first record of the logical request r
// belongs to: r's own for a first attempt (of sub-request 0, not a
// copy), Request for a retry, a hedge's copy or another sub-request.
func (r Record) LogicalSeq() int {
	if r.First() {
		return r.Seq
	}
	return r.Request
}

// First says whether r is its logical request's first record: the
// arrival itself (attempt 0 of sub-request 0, not a copy), numbered with
// the schedule's arrivals.
func (r Record) First() bool { return r.Attempt == 0 && r.Sub == 0 && r.Copy == 0 }

// Logical folds a window's records into one record per logical request
// (Fold's logical), for Metrics.
func Logical(records []Record) []Record {
	logical, _ := Fold(records)
	return logical
}

// Fold folds a window's records into one record per logical request,
// and, when the window fanned out (a record with Sub > 0), one per
// sub-request (subs; nil otherwise), each in the order of their first
// records' Seq. A sub-request's records are its attempts (retries) and
// copies (hedges); it is folded by FoldSub, a logical request's
// sub-requests by FoldRequest. Records of a window that neither retried,
// fanned out nor hedged (every record First) are returned as they are.
// The records may come in any order.
func Fold(records []Record) (logical, subs []Record) {
	plain, fanned := true, false
	for i := range records {
		if !records[i].First() {
			plain = false
		}
		if records[i].Sub > 0 {
			fanned = true
		}
	}
	if plain {
		return records, nil
	}
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b Record) int {
		if c := cmp.Compare(a.Window, b.Window); c != 0 {
			return c
		}
		if c := cmp.Compare(a.LogicalSeq(), b.LogicalSeq()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Sub, b.Sub); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Attempt, b.Attempt); c != 0 {
			return c
		}
		return cmp.Compare(a.Copy, b.Copy)
	})
	subs = make([]Record, 0, len(sorted))
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].Window == sorted[i].Window && sorted[j].LogicalSeq() == sorted[i].LogicalSeq() && sorted[j].Sub == sorted[i].Sub {
			j++
		}
		subs = append(subs, FoldSub(sorted[i:j]))
		i = j
	}
	logical = make([]Record, 0, len(subs))
	for i := 0; i < len(subs); {
		j := i + 1
		for j < len(subs) && subs[j].Window == subs[i].Window && subs[j].LogicalSeq() == subs[i].LogicalSeq() {
			j++
		}
		logical = append(logical, FoldRequest(subs[i:j]))
		i = j
	}
	if !fanned {
		subs = nil
	}
	return logical, subs
}

// FoldSub folds the records of one sub-request (of a request that did
// not fan out: of the request), its first record first, into one: the
// first's Seq, Intended, Sent, Sub and class, Request its logical
// request's Seq; the end, outcome, status, reason and lab headers of the
// copy or attempt that counts: the first to end ok, or, when none did,
// the last (by attempt, then end). Attempt is the records sent less one
// (its attempts and copies are Attempt + 1), Copy the copies sent.
func FoldSub(records []Record) Record {
	s := records[0]
	s.Request = s.LogicalSeq()
	sent, copies := 0, 0
	var won, last *Record
	for i := range records {
		r := &records[i]
		if r.Outcome == NotSent {
			continue
		}
		sent++
		if r.Copy > 0 {
			copies++
		}
		switch {
		case r.Outcome == OK && (won == nil || r.End < won.End):
			won = r
		case r.Outcome != Cancelled && (last == nil || r.Attempt > last.Attempt || r.Attempt == last.Attempt && r.End >= last.End):
			last = r
		}
	}
	if won == nil {
		won = last
	}
	if won != nil {
		s.End, s.Outcome, s.Status, s.Reason = won.End, won.Outcome, won.Status, won.Reason
		s.QueueWaitMS, s.ServiceMS = won.QueueWaitMS, won.ServiceMS
	}
	s.Attempt, s.Copy = max(sent-1, 0), copies
	return s
}

// worse ranks the outcomes of a fanned-out request's sub-requests: the
// request takes the worst. A sub-request that never finished (a bug,
// counted in lost) is worst, then one that gave up (its caller waited
// its whole timeout), an error, a refusal, and ok.
func worse(o Outcome) int {
	switch o {
	case Unfinished:
		return 4
	case Gaveup:
		return 3
	case Error:
		return 2
	case Refused:
		return 1
	}
	return 0
}

// FoldRequest folds the sub-requests of one logical request (FoldSub's,
// sub-request 0 first) into its logical record: sub-request 0's Seq,
// Intended, Sent and class; it ends when its last sub-request ends (End
// the latest); it is ok when every sub-request is, and otherwise takes
// the worst outcome (see worse; of those, the last to end) with its
// status, reason and lab headers; it was not sent when sub-request 0 was
// not (the generator sends a request's sub-requests together or none).
// Attempt is every sub-request's attempts and copies sent, less one
// (Metrics counts Attempt + 1), Copy the copies. Request is its own Seq.
func FoldRequest(subs []Record) Record {
	l := subs[0]
	l.Seq, l.Request, l.Sub = l.LogicalSeq(), l.LogicalSeq(), 0
	if l.Outcome == NotSent || len(subs) == 1 {
		return l
	}
	sent, copies := 0, 0
	var by *Record
	for i := range subs {
		s := &subs[i]
		if s.Outcome == NotSent {
			continue
		}
		sent += s.Attempt + 1
		copies += s.Copy
		l.End = max(l.End, s.End)
		if by == nil || worse(s.Outcome) > worse(by.Outcome) || worse(s.Outcome) == worse(by.Outcome) && s.End >= by.End {
			by = s
		}
	}
	l.Outcome, l.Status, l.Reason = by.Outcome, by.Status, by.Reason
	l.QueueWaitMS, l.ServiceMS = by.QueueWaitMS, by.ServiceMS
	l.Attempt, l.Copy = max(sent-1, 0), copies
	return l
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
	return []string{"window", "seq", "intended_ms", "sent_ms", "end_ms", "latency_ms", "outcome", "status", "reason", "queue_wait_ms", "service_ms", "request", "attempt", "class", "sub", "copy"}
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
		row[14] = strconv.Itoa(r.Sub)
		row[15] = strconv.Itoa(r.Copy)
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
