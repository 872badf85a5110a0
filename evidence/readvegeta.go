package evidence

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"capacitylab/result"
)

// vegeta's CSV (vegeta encode --to csv, v12) has no header and these 12
// columns: the send's Unix time in nanoseconds, the HTTP status (0 when
// there was no answer), the latency in nanoseconds, bytes out, bytes in,
// the error ("" or its text), the body in base64, the attack's name
// (-name), the request's number in its attack, the method, the URL and
// the answer's headers in base64.
const (
	vegTimestamp = iota
	vegCode
	vegLatency
	vegBytesOut
	vegBytesIn
	vegError
	vegBody
	vegAttack
	vegSeq
	vegColumns = 12
)

const vegWant = "want vegeta's 12 columns: timestamp (ns), code, latency (ns), bytes out, bytes in, error, body, attack, seq, method, url, headers, as vegeta encode --to csv writes"

// The warnings every vegeta file gets.
const (
	warnVegetaTiming = "vegeta times each request from when it actually left. When its workers are all busy (or the machine running it is) it sends late, and that wait is not in the latency (coordinated omission): the latencies here can be lower than callers of a saturated service would meet. Rerun with cmd/load, which times from the intended send and counts late sends, or compare the rate in vegeta's own report (vegeta report: Requests [total, rate, ...]) with the -rate you asked for: a lower rate means it sent late."
	warnVegetaRate   = "vegeta's file does not carry the rate you asked for (-rate) or the attack's -duration: each attack's offered rate here is its requests ÷ the span of their sends (plus one gap between sends), which is what vegeta sent, not what was asked."
)

// readVegetaCSV reads vegeta's results encoded as CSV into ds: one window
// per attack name in order of first appearance (vegeta encode of several
// files interleaves them), each request's send time its timestamp less
// its attack's first, its end that plus its latency; 2xx answers are ok,
// 503 and 429 refused, a client timeout (code 0, "Client.Timeout
// exceeded" or "deadline exceeded" in the error) gaveup, anything else an
// error with a reason from its status or error text.
func readVegetaCSV(ds *Dataset, br *bufio.Reader, lim Limits) error {
	ds.Timing = FromSent
	cl := &csvLines{br: br}
	rs := reasons{}
	attacks := map[string]int{}
	var labels []string
	var recs []result.Record
	var keys []int64
	for {
		f, line, raw, err := cl.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if o := otherFormat(raw, VegetaCSV); o != "" {
				return lineErr(line, "%s", o)
			}
			var le *LineError
			if errors.As(err, &le) && !strings.Contains(le.Msg, "want") {
				return lineErr(le.Line, "%s: %s", le.Msg, vegWant)
			}
			return err
		}
		if len(f) != vegColumns {
			msg := fmt.Sprintf("%d fields: %s", len(f), vegWant)
			if o := otherFormat(raw, VegetaCSV); o != "" {
				msg = o
			}
			return lineErr(line, "%s", msg)
		}
		if len(recs) == lim.MaxRecords {
			return tooMany(line, lim)
		}
		ts, err := strconv.ParseInt(string(f[vegTimestamp]), 10, 64)
		if err != nil || ts <= 0 {
			return lineErr(line, "timestamp %q is not a time: want the send's Unix time in nanoseconds, e.g. 1700000000123456789", clip(f[vegTimestamp]))
		}
		code, err := strconv.ParseUint(string(f[vegCode]), 10, 16)
		if err != nil || code > 999 {
			return lineErr(line, "code %q is not an HTTP status: want 100 to 599, or 0 when there was no answer", clip(f[vegCode]))
		}
		lat, err := strconv.ParseInt(string(f[vegLatency]), 10, 64)
		if err != nil || lat < 0 || ts > math.MaxInt64-lat {
			return lineErr(line, "latency %q is not a duration: want nanoseconds, 0 or more, e.g. 12500000", clip(f[vegLatency]))
		}
		for _, c := range []int{vegBytesOut, vegBytesIn} {
			if _, err := strconv.ParseUint(string(f[c]), 10, 64); err != nil {
				return lineErr(line, "bytes %q is not a count: want a whole number of bytes, 0 or more", clip(f[c]))
			}
		}
		seq, err := strconv.ParseInt(string(f[vegSeq]), 10, 64)
		if err != nil || seq < 0 {
			return lineErr(line, "seq %q is not a request number: want a whole number, 0 or more", clip(f[vegSeq]))
		}
		w, ok := attacks[string(f[vegAttack])]
		if !ok {
			w = len(labels)
			attacks[string(f[vegAttack])] = w
			labels = append(labels, string(f[vegAttack]))
		}
		var o result.Outcome
		var reason string
		if code != 0 {
			// vegeta puts the status line in the error of a status
			// outside 200-399; the code says it all.
			o, reason = classifyStatus(int(code))
		} else {
			o, reason = errorOutcome(string(f[vegError]))
		}
		recs = append(recs, result.Record{
			Window:      w,
			Sent:        time.Duration(ts),
			End:         time.Duration(ts + lat),
			Outcome:     o,
			Status:      int(code),
			Reason:      rs.intern([]byte(reason)),
			QueueWaitMS: -1,
			ServiceMS:   -1,
		})
		keys = append(keys, seq)
	}
	if len(recs) == 0 {
		return nil
	}
	sorted := finishSent(ds, recs, keys, labels)
	// Two requests of one attack with one number are two runs given the
	// same name: their times would be measured from one start.
	for i := 1; i < len(ds.Records); i++ {
		if ds.Records[i].Window == ds.Records[i-1].Window && sorted[i] == sorted[i-1] {
			return fmt.Errorf("attack %q holds two requests numbered seq %d: the file joins two runs with one name; give each run its own (vegeta attack -name NAME)", labels[ds.Records[i].Window], sorted[i])
		}
	}
	ds.Warnings = append(ds.Warnings, warnVegetaTiming, warnVegetaRate)
	return nil
}

// errorOutcome classifies a Go HTTP client's error text, as vegeta
// records it, like package loadrun classifies its own errors.
func errorOutcome(e string) (result.Outcome, string) {
	switch {
	case strings.Contains(e, "Client.Timeout") || strings.Contains(e, "deadline exceeded") || strings.Contains(e, "i/o timeout"):
		if strings.Contains(e, "dial tcp") {
			return result.Gaveup, result.ReasonDialTimeout
		}
		return result.Gaveup, result.ReasonReadTimeout
	case strings.Contains(e, "connection refused"):
		return result.Error, result.ReasonConnRefused
	case strings.Contains(e, "connection reset") || strings.Contains(e, "broken pipe"):
		return result.Error, result.ReasonReset
	case strings.Contains(e, "too many open files"):
		return result.Error, result.ReasonEMFILE
	case strings.Contains(e, "cannot assign requested address"):
		return result.Error, result.ReasonEADDRNOTAVAIL
	case strings.HasSuffix(e, "EOF"):
		return result.Error, result.ReasonEOF
	case strings.Contains(e, "malformed HTTP"):
		return result.Error, result.ReasonMalformed
	}
	return result.Error, result.ReasonOther
}
