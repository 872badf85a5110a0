package evidence

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/result"
)

// k6 writes, for each HTTP request, a sample of the metric
// http_req_duration: its value is the request's duration in milliseconds
// (sending, waiting and receiving: not the wait for a free connection nor
// the connecting), its time is when the request ended, and its tags
// include status ("0" when there was no answer), error_code (k6's code for
// a failure, e.g. 1050 for a timeout), scenario and expected_response. An
// arrival-rate executor that has no VU free to start an iteration, or an
// iteration-count executor that reaches its maxDuration, writes a sample
// of dropped_iterations (its value how many) instead. The readers here
// take only those two metrics; every other line is checked and passed
// over.
const (
	k6Duration = "http_req_duration"
	k6Dropped  = "dropped_iterations"
)

// maxK6Line bounds one line of k6's JSON output (a point with long URL
// tags is under a few kilobytes).
const maxK6Line = 1 << 20

// The warnings k6 files get.
const (
	warnK6Timing = "k6 times each request from when it actually left: http_req_duration is sending, waiting and receiving, and k6 stamps it when the request ended, so each send time here is that stamp less the duration. A request k6 could not start on time is late without it showing in the latency (coordinated omission)."
	warnK6Rate   = "k6's file does not carry the rate or the VUs its scenarios were set to: each scenario's offered rate here is its requests (and dropped iterations) ÷ the span of their sends plus one gap between sends, which is what k6 sent, not what was asked."
	warnK6Second = "This k6 CSV stamps times in whole seconds (its default timeFormat, unix): send and end times here are known only to the second, so in-flight counts and rates over short spans are rough. Rerun with K6_CSV_TIME_FORMAT=unix_micro, or with --out json."
)

// k6Reader gathers k6's samples, from either format, into records.
type k6Reader struct {
	ds        *Dataset
	lim       Limits
	rs        reasons
	scenarios map[string]int
	labels    []string
	recs      []result.Record
	keys      []int64
	dropped   []int // dropped iterations by window
	wholeSecs bool  // a timestamp was whole seconds
}

func newK6Reader(ds *Dataset, lim Limits) *k6Reader {
	ds.Timing = FromSent
	return &k6Reader{ds: ds, lim: lim, rs: reasons{}, scenarios: map[string]int{}}
}

func (k *k6Reader) window(scenario string) int {
	w, ok := k.scenarios[scenario]
	if !ok {
		w = len(k.labels)
		k.scenarios[scenario] = w
		k.labels = append(k.labels, scenario)
		k.dropped = append(k.dropped, 0)
	}
	return w
}

// duration adds one http_req_duration sample taken at end (Unix ns) with
// value ms and the request's status and error_code tags.
func (k *k6Reader) duration(line int, end int64, ms float64, scenario, status, errCode string) error {
	if len(k.recs) == k.lim.MaxRecords {
		return tooMany(line, k.lim)
	}
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms > 1e9 {
		return lineErr(line, "%s value %v is not a duration: want milliseconds, 0 or more, e.g. 12.5", k6Duration, ms)
	}
	if status == "" {
		return lineErr(line, "%s has no status tag: want k6's system tags status, error_code and scenario on each request (k6's default systemTags include them)", k6Duration)
	}
	code, err := strconv.Atoi(status)
	if err != nil || code < 0 || code > 999 {
		return lineErr(line, "status %q is not an HTTP status: want 100 to 599, or 0 when there was no answer", clip([]byte(status)))
	}
	var o result.Outcome
	var reason string
	if code != 0 {
		o, reason = classifyStatus(code)
	} else {
		o, reason = k6ErrorOutcome(errCode)
	}
	d := time.Duration(math.Round(ms * 1e6))
	k.recs = append(k.recs, result.Record{
		Window:      k.window(scenario),
		Sent:        time.Duration(end) - d,
		End:         time.Duration(end),
		Outcome:     o,
		Status:      code,
		Reason:      k.rs.intern([]byte(reason)),
		QueueWaitMS: -1,
		ServiceMS:   -1,
	})
	k.keys = append(k.keys, end-int64(d))
	return nil
}

// drop adds n iterations dropped at t (Unix ns) as requests not sent.
func (k *k6Reader) drop(line int, t int64, n float64, scenario string) error {
	if n != math.Trunc(n) || n < 1 || n > 1e9 {
		return lineErr(line, "%s value %v is not a count: want a whole number of iterations, 1 or more", k6Dropped, n)
	}
	w := k.window(scenario)
	for range int(n) {
		if len(k.recs) == k.lim.MaxRecords {
			return tooMany(line, k.lim)
		}
		k.recs = append(k.recs, result.Record{
			Window: w, Sent: time.Duration(t), End: time.Duration(t),
			Outcome: result.NotSent, Reason: result.ReasonClientBusy,
			QueueWaitMS: -1, ServiceMS: -1,
		})
		k.keys = append(k.keys, t)
		k.dropped[w]++
	}
	return nil
}

// finish numbers the records and writes the windows and warnings.
func (k *k6Reader) finish() {
	if len(k.recs) == 0 {
		return
	}
	finishSent(k.ds, k.recs, k.keys, k.labels)
	w := []string{warnK6Timing}
	if k.wholeSecs {
		w = append(w, warnK6Second)
	}
	var dropped, closed []string
	total := 0
	for i, n := range k.dropped {
		if n > 0 {
			dropped = append(dropped, scenarioName(k.labels[i]))
			total += n
		} else {
			closed = append(closed, scenarioName(k.labels[i]))
		}
	}
	if len(dropped) > 0 {
		w = append(w, fmt.Sprintf("%s dropped %s iterations (the metric dropped_iterations), so ran an arrival-rate executor (constant-arrival-rate or ramping-arrival-rate: an open loop that starts iterations on a schedule) that found no VU free, or an iteration-count executor that reached its maxDuration. They are counted here as not sent (client_busy), as load counts arrivals its busy workers could not send: they are load the service never saw. An arrival-rate executor that drops iterations had too few VUs: rerun with more preAllocatedVUs and maxVUs so every arrival is sent.", nounList("Scenario", dropped), thousands(int64(total))))
	}
	if len(closed) > 0 {
		w = append(w, fmt.Sprintf("The file does not say which executor ran %s (none dropped an iteration, the one trace an arrival-rate executor leaves). k6's VU-based executors (the default, constant-vus, ramping-vus) are a closed loop: a VU waits for each answer before sending again, so a slow service slows the load and the queue it would meet is hidden from the latencies. If these ran so, rerun with constant-arrival-rate (with enough preAllocatedVUs that none are dropped) or with cmd/load.", nounList("scenario", closed)))
	}
	w = append(w, warnK6Rate)
	k.ds.Warnings = append(k.ds.Warnings, w...)
}

func scenarioName(s string) string {
	if s == "" {
		return "(no scenario tag)"
	}
	return strconv.Quote(s)
}

// nounList is "noun x" or "nouns x, y".
func nounList(noun string, xs []string) string {
	if len(xs) == 1 {
		return noun + " " + xs[0]
	}
	return noun + "s " + strings.Join(xs, ", ")
}

// k6ErrorOutcome is the outcome of a request k6 got no answer to, from its
// error_code tag (k6's documented error codes).
func k6ErrorOutcome(code string) (result.Outcome, string) {
	switch code {
	case "1050": // request timeout
		return result.Gaveup, result.ReasonReadTimeout
	case "1211": // dial: i/o timeout
		return result.Gaveup, result.ReasonDialTimeout
	case "1212": // dial: connection refused
		return result.Error, result.ReasonConnRefused
	case "1201", "1220": // broken pipe, connection reset by peer
		return result.Error, result.ReasonReset
	}
	return result.Error, result.ReasonOther
}

// k6Point is the part of a line of k6's JSON output the reader uses.
type k6Point struct {
	Type   string `json:"type"`
	Metric string `json:"metric"`
	Data   struct {
		Time  string            `json:"time"`
		Value *float64          `json:"value"`
		Tags  map[string]string `json:"tags"`
	} `json:"data"`
}

const k6JSONWant = `want one JSON object a line, {"type":"Point","data":{"time":...,"value":...,"tags":{...}},"metric":...} or a "Metric" line, as k6 run --out json writes`

// readK6JSON reads k6's --out json lines into ds.
func readK6JSON(ds *Dataset, br *bufio.Reader, lim Limits) error {
	k := newK6Reader(ds, lim)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			var long []byte
			long = append(long, b...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxK6Line {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			if len(long) > maxK6Line {
				return lineErr(line+1, "longer than %s bytes: %s", thousands(maxK6Line), k6JSONWant)
			}
			b = long
		}
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		line++
		if perr := k.jsonLine(line, bytes.TrimSpace(b)); perr != nil {
			return perr
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
	}
	k.finish()
	return nil
}

func (k *k6Reader) jsonLine(line int, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if b[0] != '{' {
		if o := otherFormat(b, K6JSON); o != "" {
			return lineErr(line, "%s", o)
		}
		return lineErr(line, "%q is not a JSON object: %s", clip(b), k6JSONWant)
	}
	if !bytes.Contains(b, []byte(k6Duration)) && !bytes.Contains(b, []byte(k6Dropped)) {
		// Another metric: checked, not kept.
		if !json.Valid(b) {
			return lineErr(line, "not valid JSON: %s", k6JSONWant)
		}
		return nil
	}
	var p k6Point
	if err := json.Unmarshal(b, &p); err != nil {
		return lineErr(line, "not a k6 line (%v): %s", err, k6JSONWant)
	}
	if p.Type != "Point" || (p.Metric != k6Duration && p.Metric != k6Dropped) {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, p.Data.Time)
	if err != nil {
		return lineErr(line, "data.time %q is not a time: want RFC 3339 with a zone, e.g. 2024-05-09T14:34:45.239531499+02:00", clip([]byte(p.Data.Time)))
	}
	if p.Data.Value == nil {
		return lineErr(line, "%s point has no data.value: want a number", p.Metric)
	}
	tags := p.Data.Tags
	if p.Metric == k6Dropped {
		return k.drop(line, t.UnixNano(), *p.Data.Value, tags["scenario"])
	}
	return k.duration(line, t.UnixNano(), *p.Data.Value, tags["scenario"], tags["status"], tags["error_code"])
}

// readK6CSV reads k6's --out csv into ds: its header names the columns;
// metric_name, timestamp and metric_value are needed, scenario, status and
// error_code read where present. The timestamp is in any of k6's
// timeFormats: unix (whole seconds, the default), unix_milli, unix_micro,
// unix_nano, rfc3339 or rfc3339_nano.
func readK6CSV(ds *Dataset, br *bufio.Reader, lim Limits) error {
	k := newK6Reader(ds, lim)
	cl := &csvLines{br: br}
	head, _, _, err := cl.next()
	if err != nil {
		return lineErr(1, "k6's header cannot be read: %v", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[string(h)] = i
	}
	ncol := len(head)
	need := func(name string) int {
		if i, ok := col[name]; ok {
			return i
		}
		return -1
	}
	iName, iTime, iValue := need("metric_name"), need("timestamp"), need("metric_value")
	iScen, iStatus, iCode := need("scenario"), need("status"), need("error_code")
	if iName < 0 || iTime < 0 || iValue < 0 {
		return lineErr(1, "k6's header lacks metric_name, timestamp or metric_value: want the header k6 run --out csv writes")
	}
	get := func(f [][]byte, i int) string {
		if i < 0 {
			return ""
		}
		return string(f[i])
	}
	for {
		f, line, raw, err := cl.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && len(f) != ncol {
			err = lineErr(line, "%d fields: want the %d columns of k6's header, as k6 run --out csv writes", len(f), ncol)
		}
		if err != nil {
			if o := otherFormat(raw, K6CSV); o != "" {
				return lineErr(line, "%s", o)
			}
			var le *LineError
			if errors.As(err, &le) && !strings.Contains(le.Msg, "want") {
				return lineErr(le.Line, "%s: want k6's columns as its header names them, as k6 run --out csv writes", le.Msg)
			}
			return err
		}
		name := f[iName]
		if string(name) != k6Duration && string(name) != k6Dropped {
			continue
		}
		t, whole, ok := k6CSVTime(string(f[iTime]))
		if !ok {
			return lineErr(line, "timestamp %q is not a time: want one of k6's timeFormats, e.g. 1595325560 (unix), 1595325560123456 (unix_micro) or 2020-07-21T10:59:20.123456Z (rfc3339_nano)", clip(f[iTime]))
		}
		k.wholeSecs = k.wholeSecs || whole
		v, err := strconv.ParseFloat(string(f[iValue]), 64)
		if err != nil {
			return lineErr(line, "metric_value %q is not a number: want milliseconds for %s, a count for %s", clip(f[iValue]), k6Duration, k6Dropped)
		}
		if string(name) == k6Dropped {
			err = k.drop(line, t, v, get(f, iScen))
		} else {
			err = k.duration(line, t, v, get(f, iScen), get(f, iStatus), get(f, iCode))
		}
		if err != nil {
			return err
		}
	}
	k.finish()
	return nil
}

// k6CSVTime reads a k6 CSV timestamp into Unix nanoseconds, telling its
// unit by its size (a Unix time of the years 2001 to 2286 has 10 digits in
// seconds, 13 in milliseconds, 16 in microseconds, 19 in nanoseconds);
// whole says it was whole seconds.
func k6CSVTime(s string) (ns int64, whole, ok bool) {
	if strings.ContainsRune(s, 'T') {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, false, false
		}
		return t.UnixNano(), t.Nanosecond() == 0 && !strings.Contains(s, "."), true
	}
	if !allDigits([]byte(s)) {
		return 0, false, false
	}
	switch len(s) {
	case 10:
		n, _ := strconv.ParseInt(s, 10, 64)
		return n * 1e9, true, true
	case 13:
		n, _ := strconv.ParseInt(s, 10, 64)
		return n * 1e6, false, true
	case 16:
		n, _ := strconv.ParseInt(s, 10, 64)
		return n * 1e3, false, true
	case 19:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, false, err == nil
	}
	return 0, false, false
}
