package evidence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/result"
)

// maxLoadLine bounds one line of load's records: its longest real line is
// under 120 bytes.
const maxLoadLine = 1024

// Warnings a load file without its report's data gets; Attach removes them.
const (
	warnLoadEstimated = "This file holds no rates or window lengths: each window's length is estimated as the next whole second after its last intended send, and its offered rate as its arrivals ÷ that length. Upload the report's .json with the records (load --report NAME writes NAME.json) for load's own rates, lengths and clients."
	warnLoadClosedPfx = "Windows sent as a closed loop"
	warnLoadClosedRun = "This run was a closed loop (load --closed): each client waits for its answer before sending again, so the offered rate is what the clients sent and a slow service slows them; the latencies do not show the queue an open loop at the same rate would meet. Rerun open-loop (load --rate) through the knee for that."
)

// readLoadCSV reads cmd/load's records (result.WriteCSV) line by line into
// ds: each line a result.Record as load wrote it, windows numbered from 0
// in order, arrivals numbered by seq from 0 in order within each.
func readLoadCSV(ds *Dataset, br *bufio.Reader, lim Limits, size int64) error {
	ds.Timing = FromIntended
	rs := reasons{}
	var recs recordBuf
	var fields [16][]byte
	cols := 14
	var lineBytes int64
	line := 0
	win, seq := -1, -1
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(b) > maxLoadLine {
			return lineErr(line+1, "longer than %s bytes: want one request a line, as load --records writes", thousands(maxLoadLine))
		}
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		line++
		lineBytes += int64(len(b))
		b = bytes.TrimRight(b, "\r\n")
		if line == 1 {
			cols = bytes.Count(b, []byte(",")) + 1 // the header, checked by detect: 11, 14 or 16 columns
			continue
		}
		if len(b) == 0 {
			if err == nil {
				continue // a blank line
			}
			break
		}
		if recs.n == lim.MaxRecords {
			return tooMany(line, lim)
		}
		if line == 1025 && size > 0 {
			// Make room for the whole file at once, estimated from the
			// mean length of its first lines, so a million records are
			// not copied as the slice grows.
			est := int(float64(size)/(float64(lineBytes)/float64(line))*1.02) + 16
			recs.reserve(min(est, lim.MaxRecords) - recs.n)
		}
		rec, perr := parseLoadLine(b, fields[:cols], rs)
		if perr != "" {
			if o := otherFormat(b, LoadCSV); o != "" {
				perr = o
			}
			return lineErr(line, "%s", perr)
		}
		switch {
		case rec.Window == win:
			if rec.Seq != seq+1 {
				return lineErr(line, "seq %d follows seq %d in window %d: want each window's arrivals numbered from 0 in order, as load writes them", rec.Seq, seq, win)
			}
		case rec.Window == win+1:
			if rec.Seq != 0 {
				return lineErr(line, "window %d begins at seq %d: want each window's arrivals numbered from 0 in order, as load writes them", rec.Window, rec.Seq)
			}
		default:
			return lineErr(line, "window %d follows window %d: want the windows numbered from 0 in order, as load writes them", rec.Window, win)
		}
		win, seq = rec.Window, rec.Seq
		recs.add(rec)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
	}
	ds.Records = recs.all()
	loadWindows(ds)
	return nil
}

// loadWindows estimates the windows of load's records read without the
// report's data: each window's length the next whole second after its
// last intended send (load's windows are whole seconds unless --seconds
// said otherwise, and every arrival is due before the window ends), its
// offered rate its arrivals ÷ that length. Windows whose every request was
// sent when it was due (intended = sent, as load's closed loop records
// them) are named in a warning.
func loadWindows(ds *Dataset) {
	var closed []string
	for lo := 0; lo < len(ds.Records); {
		w := ds.Records[lo].Window
		hi := lo
		var last time.Duration
		sent, same := 0, 0
		for hi < len(ds.Records) && ds.Records[hi].Window == w {
			r := ds.Records[hi]
			last = max(last, r.Intended)
			if r.Outcome != result.NotSent {
				sent++
				if r.Sent == r.Intended {
					same++
				}
			}
			hi++
		}
		sec := math.Floor(last.Seconds()) + 1
		ds.Windows = append(ds.Windows, Window{Seconds: sec, Offered: result.Round(float64(hi-lo)/sec, 100)})
		if sent > 0 && same == sent {
			closed = append(closed, strconv.Itoa(w))
		}
		lo = hi
	}
	ds.Warnings = append(ds.Warnings, warnLoadEstimated)
	if len(closed) > 0 {
		ds.Warnings = append(ds.Warnings, warnLoadClosedPfx+" (every request sent when it was due, as load --closed records them): "+strings.Join(closed, ", ")+
			". A closed loop's clients wait for each answer before sending again, so its offered rate is what it sent and a slow service slows it: its latencies do not show the queue an open loop would meet. Their clients are known only from the report's .json.")
	}
}

// parseLoadLine reads one line of load's records, or says what is wrong
// with it.
func parseLoadLine(b []byte, f [][]byte, rs reasons) (result.Record, string) {
	header := strings.Join(result.CSVHeader()[:len(f)], ",")
	if bytes.IndexByte(b, '"') >= 0 {
		return result.Record{}, fmt.Sprintf("a quoted field: load's records have none; want the %d columns %s", len(f), header)
	}
	n := 0
	for n < len(f) {
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			f[n] = b
			n++
			b = nil
			break
		}
		f[n] = b[:i]
		b = b[i+1:]
		n++
	}
	if n < len(f) || b != nil {
		got := n
		if b != nil {
			got += bytes.Count(b, []byte(",")) + 1
		}
		return result.Record{}, fmt.Sprintf("%d fields: want the %d columns %s", got, len(f), header)
	}
	var r result.Record
	var ok bool
	if r.Window, ok = smallInt(f[0]); !ok {
		return r, fmt.Sprintf("window %q is not a whole number: want the window's index from 0, e.g. 3", clip(f[0]))
	}
	if r.Seq, ok = smallInt(f[1]); !ok {
		return r, fmt.Sprintf("seq %q is not a whole number: want the arrival's number in its window from 0, e.g. 1204", clip(f[1]))
	}
	if r.Intended, ok = parseMS(f[2]); !ok {
		return r, msWant("intended_ms", f[2])
	}
	if err := r.Outcome.UnmarshalText(f[6]); err != nil {
		return r, fmt.Sprintf("outcome %q is not known: want ok, refused, gaveup, error or not_sent", clip(f[6]))
	}
	if r.Outcome == result.NotSent {
		for i := 3; i <= 5; i++ {
			if len(f[i]) != 0 {
				return r, fmt.Sprintf("%s is %q for a request not sent: want it empty", result.CSVHeader()[i], clip(f[i]))
			}
		}
		r.Sent, r.End = r.Intended, r.Intended
	} else {
		if r.Sent, ok = parseMS(f[3]); !ok {
			return r, msWant("sent_ms", f[3])
		}
		if r.End, ok = parseMS(f[4]); !ok {
			return r, msWant("end_ms", f[4])
		}
		lat, ok := parseMS(f[5])
		if !ok {
			return r, msWant("latency_ms", f[5])
		}
		if r.End < r.Sent {
			return r, fmt.Sprintf("end_ms %s is before sent_ms %s: want a request to end after it was sent", f[4], f[3])
		}
		// load writes each time truncated to the microsecond, so the
		// difference of two may be 1 µs from the truncated latency.
		if d := lat - (r.End - r.Intended); d > time.Microsecond || d < -time.Microsecond {
			return r, fmt.Sprintf("latency_ms %s is not end_ms − intended_ms (%s − %s): want the two to agree, as load writes them", f[5], f[4], f[2])
		}
	}
	if len(f[7]) > 0 {
		s, ok := smallInt(f[7])
		if !ok || s < 100 || s > 599 {
			return r, fmt.Sprintf("status %q is not an HTTP status: want 100 to 599, or empty when there was no answer", clip(f[7]))
		}
		r.Status = s
	}
	if !reasonToken(f[8]) {
		return r, fmt.Sprintf("reason %q is not a reason: want a word of lower-case letters, digits and _ such as read_timeout or status_500, or empty", clip(f[8]))
	}
	r.Reason = rs.intern(f[8])
	if r.QueueWaitMS, ok = optMS(f[9]); !ok {
		return r, fmt.Sprintf("queue_wait_ms %q is not a number: want milliseconds, e.g. 12.5, or empty when the service did not say", clip(f[9]))
	}
	if r.ServiceMS, ok = optMS(f[10]); !ok {
		return r, fmt.Sprintf("service_ms %q is not a number: want milliseconds, e.g. 12.5, or empty when the service did not say", clip(f[10]))
	}
	if len(f) == 11 {
		return r, ""
	}
	if r.Request, ok = smallInt(f[11]); !ok || r.Request > r.Seq {
		return r, fmt.Sprintf("request %q is not a request's first seq: want a whole number no greater than seq (%d)", clip(f[11]), r.Seq)
	}
	if r.Attempt, ok = smallInt(f[12]); !ok || r.Attempt > 100 {
		return r, fmt.Sprintf("attempt %q is not an attempt: want 0 for a first attempt, 1 to 100 for a retry", clip(f[12]))
	}
	if len(f) == 16 {
		if r.Sub, ok = smallInt(f[14]); !ok || r.Sub >= 100 {
			return r, fmt.Sprintf("sub %q is not a sub-request: want 0 to 99", clip(f[14]))
		}
		if r.Copy, ok = smallInt(f[15]); !ok || r.Copy > 5 {
			return r, fmt.Sprintf("copy %q is not a copy: want 0 for a request, 1 to 5 for a hedge's copy", clip(f[15]))
		}
	}
	if r.First() != (r.Request == r.Seq) {
		return r, fmt.Sprintf("request %d does not fit seq %d, attempt %d, sub %d and copy %d: want request = seq for a request's first record (attempt, sub and copy 0), request < seq for a retry, a copy or another sub-request", r.Request, r.Seq, r.Attempt, r.Sub, r.Copy)
	}
	if r.First() {
		r.Request = 0 // a first record is its own request (Record.LogicalSeq)
	}
	if err := r.Class.UnmarshalText(f[13]); err != nil {
		return r, fmt.Sprintf("class %q is not known: want critical, default or sheddable", clip(f[13]))
	}
	return r, ""
}

func msWant(col string, b []byte) string {
	if len(b) == 0 {
		return col + " is empty: want milliseconds from the window's start, e.g. 12.5 (empty only for not_sent)"
	}
	return fmt.Sprintf("%s %q is not a number: want milliseconds, e.g. 12.5", col, clip(b))
}

// smallInt reads 1 to 9 decimal digits.
func smallInt(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// parseMS reads milliseconds written as digits with up to six decimals
// (load writes three) into a Duration exactly, with no float rounding.
func parseMS(b []byte) (time.Duration, bool) {
	ip, fp, point := b, []byte(nil), false
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		ip, fp, point = b[:i], b[i+1:], true
	}
	if len(ip) == 0 || len(ip) > 12 || (point && (len(fp) == 0 || len(fp) > 6)) {
		return 0, false
	}
	var ms, frac int64
	for _, c := range ip {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	scale := int64(1_000_000)
	for _, c := range fp {
		if c < '0' || c > '9' {
			return 0, false
		}
		scale /= 10
		frac += int64(c-'0') * scale
	}
	return time.Duration(ms*1_000_000 + frac), true
}

// optMS reads an optional non-negative number of milliseconds: -1 when
// empty.
func optMS(b []byte) (float64, bool) {
	if len(b) == 0 {
		return -1, true
	}
	for _, c := range b {
		if (c < '0' || c > '9') && c != '.' {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// reasonToken reports whether b is empty or a reason word: at most 40
// lower-case letters, digits and underscores.
func reasonToken(b []byte) bool {
	if len(b) > 40 {
		return false
	}
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// recordBuf gathers records a chunk at a time, so a million of them are
// not copied again and again as one slice grows: all joins the chunks
// once at the end, and a buffer reserved for them all up front (reserve)
// is one chunk that is not copied at all.
type recordBuf struct {
	chunks [][]result.Record
	n      int
}

// maxChunk is the most records a chunk grows to (about 11 MB).
const maxChunk = 128 << 10

func (b *recordBuf) add(r result.Record) {
	k := len(b.chunks)
	if k == 0 || len(b.chunks[k-1]) == cap(b.chunks[k-1]) {
		size := 1024
		if k > 0 {
			size = min(2*cap(b.chunks[k-1]), maxChunk)
		}
		b.chunks = append(b.chunks, make([]result.Record, 0, size))
		k++
	}
	b.chunks[k-1] = append(b.chunks[k-1], r)
	b.n++
}

// reserve makes the next chunk room for n more records.
func (b *recordBuf) reserve(n int) {
	if n <= 0 {
		return
	}
	if k := len(b.chunks); k == 1 {
		// Only the first small chunk so far: replace it with one that
		// holds them all.
		c := make([]result.Record, len(b.chunks[0]), len(b.chunks[0])+n)
		copy(c, b.chunks[0])
		b.chunks[0] = c
		return
	}
	b.chunks = append(b.chunks, make([]result.Record, 0, n))
}

// all is every record added, in order, in one slice.
func (b *recordBuf) all() []result.Record {
	switch len(b.chunks) {
	case 0:
		return nil
	case 1:
		return b.chunks[0]
	}
	out := make([]result.Record, 0, b.n)
	for i, c := range b.chunks {
		out = append(out, c...)
		b.chunks[i] = nil
	}
	return out
}
