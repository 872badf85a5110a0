// Command release is bench/release.sh's per-second pass over cmd/load's
// records: it cuts a window's records into seconds with
// loadrun.SampleRecords, as a run over time's samples are counted (answers
// by the second they ended in, arrivals not sent by the second they were
// due in), adds the generator's in flight averaged over each second, and
// prints each second, or one summary line of the seconds before and after
// the release.
//
// Usage:
//
//	release watch CONTROL_URL                 poll the lab's /stats and /config every 100 ms, print one line each, until stopped
//	release seconds RELEASE_S RECORDS [WATCH]           one line a second
//	release summary NAME RELEASE_S RECORDS [WATCH]
//	release header                            the summary's column names
//
// WATCH is what watch printed during the run: the lab's policy limit, read
// beside the seconds from the moment the lab's WAIT_MS first changed,
// which is the release (the window's second RELEASE_S).
//
// The summary's columns, before (from 2 s to the release) and after (from
// 3 s after the release to the window's last whole second): ok, refused,
// gave up and client_busy a second; in flight, the generator's requests
// sent and not ended, averaged over the seconds; the ok answers' p99 (ms);
// after the release also the lab's median service time (ms, its
// X-Service-Ms on the ok answers: what the release made it), the
// policy's limit (least, mean and most, from WATCH; "none" for a policy
// with no bound on requests inside), and conv, the seconds from the
// release to convergence (see converged), with GOAL ok a second (default
// 31.5: 90% of 35); and lag99, the p99 of how late the generator sent
// (ms, the whole window): above a few ms the machine, not the lab, shaped
// the run (an ok answer's latency counts from the intended send, so a
// late send can make it longer than the timeout).
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"capacitylab/result"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(2)
	}
}

const usage = "usage: release header | release watch CONTROL_URL | release seconds RELEASE_S RECORDS [WATCH] | release summary NAME RELEASE_S RECORDS [WATCH]"

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch {
	case args[0] == "watch" && len(args) == 2:
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return watch(ctx, args[1], out)
	case args[0] == "header" && len(args) == 1:
		fmt.Fprintln(out, summaryHeader)
		return nil
	case args[0] == "seconds" && (len(args) == 3 || len(args) == 4):
		rel, err := strconv.Atoi(args[1])
		if err != nil {
			return fmt.Errorf("RELEASE_S %q: want whole seconds", args[1])
		}
		recs, err := readRecords(args[2])
		if err != nil {
			return err
		}
		secs := perSecond(recs)
		var w []polled
		if len(args) == 4 {
			if w, err = readWatch(args[3]); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "%4s %4s %7s %6s %11s %6s %9s %6s %6s %5s\n", "s", "ok", "refused", "gaveup", "client_busy", "error", "in_flight", "p99_ms", "limit", "wait")
		for _, s := range secs {
			lim, wait := "-", "-"
			if p, ok := at(w, s.At-rel); ok {
				lim, wait = strconv.Itoa(p.Limit), strconv.Itoa(p.WaitMS)
			}
			fmt.Fprintf(out, "%4d %4d %7d %6d %11d %6d %9.2f %6.0f %6s %5s\n", s.At, s.OK, s.Refused, s.GaveUp, s.Busy, s.Errors+s.NotSt, s.InFlight, s.P99MS, lim, wait)
		}
		return nil
	case args[0] == "summary" && (len(args) == 4 || len(args) == 5):
		rel, err := strconv.Atoi(args[2])
		if err != nil || rel < 3 {
			return fmt.Errorf("RELEASE_S %q: want whole seconds, at least 3", args[2])
		}
		recs, err := readRecords(args[3])
		if err != nil {
			return err
		}
		var w []polled
		if len(args) == 5 {
			if w, err = readWatch(args[4]); err != nil {
				return err
			}
		}
		goal := 31.5
		if g := os.Getenv("GOAL"); g != "" {
			if goal, err = strconv.ParseFloat(g, 64); err != nil {
				return fmt.Errorf("GOAL %q: want ok answers a second", g)
			}
		}
		fmt.Fprintln(out, summarize(args[1], rel, recs, w, goal))
		return nil
	}
	return errors.New(usage)
}

// summaryHeader names summarize's columns.
const summaryHeader = "experiment                                                         |  before: ok  ref  gup busy infl  p99 |   after: ok  ref  gup busy infl  p99 svc limit(min/mean/max) conv lag99"

func summarize(name string, rel int, recs []result.Record, w []polled, goal float64) string {
	secs := perSecond(recs)
	last := len(secs) - 1 // the last second holds only the window's stragglers
	b := spanOf(recs, secs, 2, rel)
	a := spanOf(recs, secs, rel+3, last)
	lim := "-"
	if lo, mean, hi, ok := limits(w, 3, last-rel); ok {
		lim = fmt.Sprintf("%d/%.1f/%d", lo, mean, hi)
		if hi == 0 {
			lim = "none" // the policy has no bound on requests inside
		}
	}
	conv := "never"
	if c := converged(secs, rel, last, 3, goal); c >= 0 {
		conv = fmt.Sprintf("%ds", c-rel)
	}
	var svc []float64
	for _, r := range recs {
		if r.Outcome == result.OK && r.End >= time.Duration(rel+3)*time.Second && r.ServiceMS >= 0 {
			svc = append(svc, r.ServiceMS)
		}
	}
	var lag []float64
	for _, r := range recs {
		if r.Outcome != result.NotSent {
			lag = append(lag, ms(r.Lag()))
		}
	}
	f := func(s span) string {
		return fmt.Sprintf("%4.1f %4.1f %4.1f %4.1f %4.1f %4.0f", s.OK, s.Refused, s.GaveUp, s.Busy, s.InFlight, s.P99MS)
	}
	return fmt.Sprintf("%-66s |     %s |     %s %3.0f %19s %4s %5.1f", name, f(b), f(a), quantile(svc, 0.5), lim, conv, quantile(lag, 0.99))
}

// polled is one of watch's lines.
type polled struct {
	T         float64 // unix seconds
	WaitMS    int     `json:"wait_ms"`
	Queued    int     `json:"queued"`
	InService int     `json:"in_service"`
	Limit     int     `json:"policy_limit"`
	Dropped   int64   `json:"dropped"`
	rel       float64 // seconds since the release, once aligned
}

func watch(ctx context.Context, control string, out io.Writer) error {
	c := &http.Client{Timeout: time.Second}
	get := func(path string, v any) error {
		resp, err := c.Get(control + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(v)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		var p polled
		t := time.Now()
		if get("/stats", &p) != nil || get("/config", &p) != nil {
			continue // the lab is starting or stopping
		}
		fmt.Fprintf(out, "%.3f %d %d %d %d %d\n", float64(t.UnixMilli())/1000, p.WaitMS, p.Queued, p.InService, p.Limit, p.Dropped)
	}
}

// readWatch reads watch's lines and aligns them on the first change of
// WAIT_MS (rel 0).
func readWatch(path string) ([]polled, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ps []polled
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p polled
		if _, err := fmt.Sscan(sc.Text(), &p.T, &p.WaitMS, &p.Queued, &p.InService, &p.Limit, &p.Dropped); err != nil {
			return nil, fmt.Errorf("%s: line %q: %v", path, sc.Text(), err)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("%s: no lines", path)
	}
	t0 := -1.0
	for _, p := range ps[1:] {
		if p.WaitMS != ps[0].WaitMS {
			t0 = p.T
			break
		}
	}
	if t0 < 0 {
		return nil, fmt.Errorf("%s: WAIT_MS never changed: no release to align on", path)
	}
	for i := range ps {
		ps[i].rel = ps[i].T - t0
	}
	return ps, sc.Err()
}

// at is the last poll in the second that starts sec seconds after the
// release.
func at(w []polled, sec int) (polled, bool) {
	var got polled
	found := false
	for _, p := range w {
		if p.rel >= float64(sec) && p.rel < float64(sec+1) {
			got, found = p, true
		}
	}
	return got, found
}

// limits is the least, mean and most policy limit polled from from to to
// seconds after the release.
func limits(w []polled, from, to int) (lo int, mean float64, hi int, ok bool) {
	n := 0
	for _, p := range w {
		if p.rel < float64(from) || p.rel >= float64(to) {
			continue
		}
		if n == 0 || p.Limit < lo {
			lo = p.Limit
		}
		hi = max(hi, p.Limit)
		mean += float64(p.Limit)
		n++
	}
	if n == 0 {
		return 0, 0, 0, false
	}
	return lo, mean / float64(n), hi, true
}

// readRecords reads cmd/load's --records CSV (result.WriteCSV's columns).
func readRecords(path string) ([]result.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(result.CSVHeader(), ",") {
		return nil, fmt.Errorf("%s: not load's records (want the header %s)", path, strings.Join(result.CSVHeader(), ","))
	}
	recs := make([]result.Record, 0, len(rows)-1)
	for i, row := range rows[1:] {
		r, err := parseRecord(row)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", path, i+2, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func parseRecord(row []string) (result.Record, error) {
	var r result.Record
	var err error
	num := func(s string) float64 {
		if err != nil || s == "" {
			return -1
		}
		var v float64
		v, err = strconv.ParseFloat(s, 64)
		return v
	}
	dur := func(s string) time.Duration { return time.Duration(num(s) * float64(time.Millisecond)) }
	r.Window = int(num(row[0]))
	r.Seq = int(num(row[1]))
	r.Intended = dur(row[2])
	if err == nil {
		err = r.Outcome.UnmarshalText([]byte(row[6]))
	}
	r.Sent, r.End = r.Intended, r.Intended
	if r.Outcome != result.NotSent {
		r.Sent, r.End = dur(row[3]), dur(row[4])
	}
	if row[7] != "" {
		r.Status = int(num(row[7]))
	}
	r.Reason = row[8]
	r.QueueWaitMS, r.ServiceMS = num(row[9]), num(row[10])
	return r, err
}
