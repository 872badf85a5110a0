package evidence

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"capacitylab/result"
)

// The limits DefaultLimits returns: a million requests, as the course's
// analysis is measured for, and a file size that holds them in load's CSV
// (about 60 bytes a record) with room to spare.
const (
	DefaultMaxRecords = 1_000_000
	DefaultMaxBytes   = 100 << 20
)

// DefaultLimits are the limits an upload is read with: at most
// DefaultMaxRecords requests in at most DefaultMaxBytes.
func DefaultLimits() Limits {
	return Limits{MaxBytes: DefaultMaxBytes, MaxRecords: DefaultMaxRecords}
}

// knownFormats says which files Read knows and how each is made, for the
// error that refuses any other.
const knownFormats = "want one of: cmd/load's records (load --records FILE: a CSV whose first line is " +
	"window,seq,intended_ms,...); vegeta's results as CSV (vegeta encode --to csv results.bin > results.csv); " +
	"k6's JSON lines (k6 run --out json=results.json script.js); or k6's CSV (k6 run --out csv=results.csv script.js)"

// maxHeadBytes is how much of a file's start Read looks at to tell its
// format.
const maxHeadBytes = 64 << 10

// Read reads one results file, named name, into a Dataset. It tells the
// format from the content (see the package doc for the four it knows),
// reads it line by line, and refuses with an error naming the line and
// what is allowed: a line it cannot read, a line of another tool's format,
// a file over lim.MaxBytes or with more than lim.MaxRecords requests, an
// empty file, or a file in no format it knows. A zero field of lim takes
// DefaultLimits' value.
//
// Each request becomes one result.Record, its Window the index of its
// step in the Dataset's Windows and its times offsets from that step's
// start; records are in window then Seq order. What the file could not
// say (the rate asked for, a latency timed from the actual send) is said
// in the Dataset's Warnings.
func Read(name string, r io.Reader, lim Limits) (Dataset, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxRecords <= 0 {
		lim.MaxRecords = DefaultMaxRecords
	}
	cr := &capReader{r: r, max: lim.MaxBytes}
	br := bufio.NewReaderSize(cr, maxHeadBytes)
	ds, err := readAny(name, br, lim, sizeOf(r))
	if cr.over {
		return Dataset{}, fmt.Errorf("the file is larger than the limit of %s: want at most %s; split a long test into several files (one a window or attack) or keep fewer windows", sizeText(lim.MaxBytes), sizeText(lim.MaxBytes))
	}
	if err != nil {
		return Dataset{}, err
	}
	return ds, nil
}

// sizeOf is r's length when r knows it (a file, an upload's part, a
// bytes.Reader), else 0: a hint for how many records to make room for.
func sizeOf(r io.Reader) int64 {
	switch v := r.(type) {
	case interface{ Size() int64 }:
		return v.Size()
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return 0
}

func readAny(name string, br *bufio.Reader, lim Limits, size int64) (Dataset, error) {
	format, err := detect(br)
	if err != nil {
		return Dataset{}, err
	}
	ds := Dataset{Name: name, Format: format}
	switch format {
	case LoadCSV:
		err = readLoadCSV(&ds, br, lim, size)
	case VegetaCSV:
		err = readVegetaCSV(&ds, br, lim)
	case K6JSON:
		err = readK6JSON(&ds, br, lim)
	case K6CSV:
		err = readK6CSV(&ds, br, lim)
	}
	if err != nil {
		return Dataset{}, err
	}
	if len(ds.Records) == 0 {
		return Dataset{}, fmt.Errorf("the file holds no requests: %s", formatWant(format))
	}
	return ds, nil
}

// formatWant says what a file of format should hold, for the error that
// finds none of it.
func formatWant(f Format) string {
	switch f {
	case LoadCSV:
		return "want a line a request after the header, as load --records writes"
	case VegetaCSV:
		return "want a line a request, as vegeta encode --to csv writes"
	case K6JSON:
		return `want Point lines of the metric http_req_duration, as k6 run --out json writes for each HTTP request`
	default:
		return "want lines of the metric http_req_duration, as k6 run --out csv writes for each HTTP request"
	}
}

// capReader passes at most max bytes of r through; reading past them
// fails with errTooLarge and sets over.
type capReader struct {
	r    io.Reader
	max  int64
	n    int64
	over bool
}

var errTooLarge = errors.New("the file is over the size limit")

func (c *capReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errTooLarge
	}
	if room := c.max + 1 - c.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.over = true
		return 0, errTooLarge
	}
	return n, err
}

// sizeText is a byte count as a person reads it: "100 MiB (104,857,600 bytes)".
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%s bytes)", n>>20, thousands(n))
	}
	return thousands(n) + " bytes"
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// LineError is a mistake on one line of a results file.
type LineError struct {
	Line int    // from 1
	Msg  string // what is wrong and what is allowed
}

func (e *LineError) Error() string { return "line " + thousands(int64(e.Line)) + ": " + e.Msg }

func lineErr(line int, format string, args ...any) error {
	return &LineError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// tooMany is the error for the request past lim.MaxRecords, on line.
func tooMany(line int, lim Limits) error {
	return lineErr(line, "more than %s requests: the limit is %s a file; split a long test into several files", thousands(int64(lim.MaxRecords)), thousands(int64(lim.MaxRecords)))
}

// detect tells a file's format from its first line, without consuming it.
func detect(br *bufio.Reader) (Format, error) {
	head, err := br.Peek(maxHeadBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", err
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return "", fmt.Errorf("the file is empty: %s", knownFormats)
	}
	if bytes.HasPrefix(head, []byte("\xef\xbb\xbf")) {
		// A byte-order mark, as some editors write: skip it.
		if _, err := br.Discard(3); err != nil {
			return "", err
		}
		head = head[3:]
	}
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	first = bytes.TrimRight(first, "\r")
	if f := sniffLine(first); f != "" {
		if f == LoadCSV && string(first) != loadHeader && string(first) != loadHeader11 && string(first) != loadHeader14 {
			return "", lineErr(1, "load's header is %q: want exactly %q, as load --records writes (or its first 11 or 14 columns, as load wrote before retries and before fan-out)", clip(first), loadHeader)
		}
		return f, nil
	}
	if !utf8.Valid(head[:len(head)-utf8.UTFMax*boolInt(len(head) == maxHeadBytes)]) || bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("the file is not text; vegeta attack writes binary results: encode them first (vegeta encode --to csv results.bin > results.csv). Otherwise %s", knownFormats)
	}
	t := bytes.TrimSpace(first)
	if bytes.HasPrefix(t, []byte("{")) && bytes.Contains(t, []byte(`"attack"`)) && bytes.Contains(t, []byte(`"latency"`)) {
		return "", errors.New("this is vegeta's results as JSON: encode them as CSV instead (vegeta encode --to csv results.bin > results.csv)")
	}
	return "", fmt.Errorf("the format of the file is not known (its first line begins %q): %s", clip(first), knownFormats)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// loadHeader is load's CSV header line; loadHeader11 the one it wrote
// before a record carried its request, attempt and class, and
// loadHeader14 the one before its sub-request and copy, which are still
// read (every record then its own request, attempt 0, class default; sub
// 0, copy 0).
var (
	loadHeader   = strings.Join(result.CSVHeader(), ",")
	loadHeader11 = strings.Join(result.CSVHeader()[:11], ",")
	loadHeader14 = strings.Join(result.CSVHeader()[:14], ",")
)

// sniffLine says which format line looks like it belongs to, "" for none:
// a header names its format, a JSON object of type Metric or Point is k6's,
// and a line of at least 12 comma-separated fields starting with a Unix
// time in nanoseconds and a status code is vegeta's.
func sniffLine(line []byte) Format {
	t := bytes.TrimSpace(line)
	switch {
	case bytes.HasPrefix(t, []byte("window,seq,")):
		return LoadCSV
	case bytes.HasPrefix(t, []byte("metric_name,timestamp,metric_value")):
		return K6CSV
	case bytes.HasPrefix(t, []byte("{")):
		if bytes.Contains(t, []byte(`"type"`)) && (bytes.Contains(t, []byte(`"Point"`)) || bytes.Contains(t, []byte(`"Metric"`))) {
			return K6JSON
		}
		return ""
	}
	f := bytes.SplitN(t, []byte(","), 3)
	if len(f) == 3 && bytes.Count(t, []byte(",")) >= 11 && len(f[0]) >= 16 && len(f[0]) <= 19 && allDigits(f[0]) && len(f[1]) <= 3 && allDigits(f[1]) {
		return VegetaCSV
	}
	return ""
}

// otherFormat is the message for a line of format got in a file of want, or
// "" when the line looks like no other format.
func otherFormat(line []byte, want Format) string {
	got := sniffLine(line)
	if got == "" || got == want {
		return ""
	}
	return fmt.Sprintf("this line is of %s in a file of %s: want one tool's file at a time", formatName(got), formatName(want))
}

// formatName names a format in prose.
func formatName(f Format) string {
	switch f {
	case LoadCSV:
		return "cmd/load's records (load-csv)"
	case VegetaCSV:
		return "vegeta's CSV (vegeta-csv)"
	case K6JSON:
		return "k6's JSON output (k6-json)"
	case K6CSV:
		return "k6's CSV output (k6-csv)"
	}
	return string(f)
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// clip shortens a line for an error message.
func clip(b []byte) string {
	const n = 80
	if len(b) <= n {
		return string(b)
	}
	s := string(b[:n])
	for !utf8.ValidString(s) && len(s) > 0 {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// reasons interns the reasons records carry, so a million records share
// a handful of strings.
type reasons map[string]string

func (rs reasons) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := rs[string(b)]; ok {
		return s
	}
	s := string(b)
	rs[s] = s
	return s
}

// classifyStatus is the outcome of an answer with HTTP status code from a
// tool other than load: any 2xx is ok (the service answered the request),
// 503 and 429 are refused (the service turned it away, as an admission
// limit does), any other status an error with reason status_NNN.
func classifyStatus(code int) (result.Outcome, string) {
	switch {
	case code >= 200 && code <= 299:
		return result.OK, ""
	case code == 503 || code == 429:
		return result.Refused, ""
	}
	return result.Error, result.ReasonStatusPrefix + strconv.Itoa(code)
}

// finishSent turns records read with absolute times (Sent, End and
// Intended in nanoseconds since the Unix epoch, Window set, keys giving
// their order within a window) into the Dataset's records and windows:
// sorted by window then key, numbered by Seq from 0, times offsets from
// each window's first send, Intended = Sent. Each window's length is
// estimated from its send times (see estimateSeconds) and its offered rate
// is its arrivals ÷ that length. It returns the keys in the records' new
// order.
func finishSent(ds *Dataset, recs []result.Record, keys []int64, labels []string) []int64 {
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := recs[a].Window - recs[b].Window; c != 0 {
			return c
		}
		switch {
		case keys[a] < keys[b]:
			return -1
		case keys[a] > keys[b]:
			return 1
		}
		return 0
	})
	out := make([]result.Record, len(recs))
	sorted := make([]int64, len(recs))
	for i, j := range idx {
		out[i], sorted[i] = recs[j], keys[j]
	}
	ds.Windows = make([]Window, len(labels))
	for lo := 0; lo < len(out); {
		w := out[lo].Window
		hi := lo
		start := out[lo].Sent
		for hi < len(out) && out[hi].Window == w {
			start = min(start, out[hi].Sent)
			hi++
		}
		var last time.Duration
		for i := lo; i < hi; i++ {
			r := &out[i]
			r.Seq = i - lo
			r.Sent -= start
			r.End -= start
			r.Intended = r.Sent
			last = max(last, r.Sent)
		}
		sec := estimateSeconds(hi-lo, last, out[lo:hi])
		ds.Windows[w] = Window{Label: labels[w], Seconds: sec, Offered: result.Round(float64(hi-lo)/sec, 100)}
		lo = hi
	}
	ds.Records = out
	return sorted
}

// estimateSeconds is the length of a window whose n requests were sent
// from 0 to last: the span of the sends plus one mean gap between them,
// which for a tool that spaces n sends evenly over its duration (vegeta,
// k6's arrival-rate executors) is that duration, so the offered rate is
// the one it paced. A window of one request, or of sends all at once, has
// no span: its length is then the time its last answer took (at least
// 1 ms).
func estimateSeconds(n int, last time.Duration, recs []result.Record) float64 {
	if n >= 2 && last > 0 {
		return last.Seconds() * float64(n) / float64(n-1)
	}
	var end time.Duration
	for _, r := range recs {
		end = max(end, r.End)
	}
	return math.Max(end.Seconds(), 0.001)
}

// csvLines reads a CSV file a record at a time, keeping each record's
// line number and raw text for the errors that name them. A line without
// quotes is split on its commas in place; a line with quotes is read by
// encoding/csv, joined with the lines after it while a quoted field runs
// on (to at most maxCSVRecord bytes).
type csvLines struct {
	br     *bufio.Reader
	line   int // lines read
	fields [][]byte
	long   []byte // a line longer than the bufio.Reader's buffer
	rec    []byte // a record with quoted fields
}

// maxCSVRecord bounds one record of a tool's CSV: vegeta's carries the
// answer's body and headers in base64.
const maxCSVRecord = 1 << 20

// next returns the next record's fields (valid until the next call), the
// line it starts on and its raw text; io.EOF at the end. Blank lines are
// passed over.
func (c *csvLines) next() ([][]byte, int, []byte, error) {
	for {
		b, err := c.readLine()
		if len(b) == 0 && err != nil {
			return nil, c.line, nil, err
		}
		start := c.line
		raw := bytes.TrimRight(b, "\r\n")
		if len(raw) == 0 {
			if err != nil {
				return nil, c.line, nil, err
			}
			continue
		}
		if bytes.IndexByte(raw, '"') < 0 {
			c.fields = splitComma(c.fields[:0], raw)
			return c.fields, start, raw, nil
		}
		// Quoted fields: let encoding/csv read them, taking more lines
		// while a quoted field has not closed.
		rec := append(c.rec[:0], b...)
		for {
			r := csv.NewReader(bytes.NewReader(rec))
			r.FieldsPerRecord = -1
			f, perr := r.Read()
			if perr == nil {
				c.rec = rec
				c.fields = c.fields[:0]
				for _, s := range f {
					c.fields = append(c.fields, []byte(s))
				}
				return c.fields, start, bytes.TrimRight(rec, "\r\n"), nil
			}
			var pe *csv.ParseError
			if !errors.As(perr, &pe) || !errors.Is(pe.Err, csv.ErrQuote) || err != nil || len(rec) > maxCSVRecord {
				if pe != nil {
					return nil, start, bytes.TrimRight(rec, "\r\n"), lineErr(start+pe.Line-1, "%v", pe.Err)
				}
				return nil, start, bytes.TrimRight(rec, "\r\n"), lineErr(start, "%v", perr)
			}
			var more []byte
			more, err = c.readLine()
			if len(more) == 0 && err != nil {
				return nil, start, bytes.TrimRight(rec, "\r\n"), lineErr(start, "a quoted field is not closed by the end of the file")
			}
			rec = append(rec, more...)
		}
	}
}

// readLine reads one physical line, at most maxCSVRecord bytes.
func (c *csvLines) readLine() ([]byte, error) {
	b, err := c.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		c.long = append(c.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) && len(c.long) <= maxCSVRecord {
			b, err = c.br.ReadSlice('\n')
			c.long = append(c.long, b...)
		}
		if len(c.long) > maxCSVRecord {
			return nil, lineErr(c.line+1, "longer than %s bytes: want one request a line", thousands(maxCSVRecord))
		}
		b = c.long
	}
	if len(b) > 0 {
		c.line++
	}
	return b, err
}

// splitComma appends the comma-separated fields of b to dst.
func splitComma(dst [][]byte, b []byte) [][]byte {
	for {
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			return append(dst, b)
		}
		dst = append(dst, b[:i])
		b = b[i+1:]
	}
}
