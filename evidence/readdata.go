package evidence

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"capacitylab/result"
)

// ReportDataTool and ReportDataVersion are what load's report data says
// it is.
const (
	ReportDataTool    = "capacitylab load"
	ReportDataVersion = 1
)

// ReadData reads load's report data (the NAME.json load --report NAME
// writes) of at most maxBytes, and checks it is whole: the tool and
// version it was written by, its loop, and one row a window numbered from
// 0 with a length, a rate and arrivals that can be. It does not check it
// against any records: Attach does.
func ReadData(r io.Reader, maxBytes int64) (*ReportData, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	cr := &capReader{r: r, max: maxBytes}
	dec := json.NewDecoder(cr)
	var d ReportData
	err := dec.Decode(&d)
	if cr.over {
		return nil, fmt.Errorf("the report data is larger than the limit of %s: want load's NAME.json as load --report NAME writes it", sizeText(maxBytes))
	}
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the report data is empty: want load's NAME.json as load --report NAME writes it")
	}
	if err != nil {
		return nil, fmt.Errorf("the report data is not load's JSON (%v): want load's NAME.json as load --report NAME writes it", jsonErr(err))
	}
	if dec.More() {
		return nil, errors.New("the report data holds more than one JSON value: want load's NAME.json as load --report NAME writes it, one object")
	}
	if d.Tool != ReportDataTool || d.Version != ReportDataVersion {
		return nil, fmt.Errorf("the report data says tool %q version %d: want tool %q version %d, as load --report writes", d.Tool, d.Version, ReportDataTool, ReportDataVersion)
	}
	if d.Loop != "open" && d.Loop != "closed" {
		return nil, fmt.Errorf("the report data's loop is %q: want open or closed", d.Loop)
	}
	if len(d.Rows) == 0 {
		return nil, errors.New("the report data has no rows: want one a window, as load printed them")
	}
	for i, r := range d.Rows {
		switch {
		case r.Window != i:
			return nil, fmt.Errorf("the report data's row %d is for window %d: want one row a window, numbered from 0 in order", i, r.Window)
		case !(r.Seconds > 0 && r.Seconds <= result.MaxSeconds):
			return nil, fmt.Errorf("window %d's seconds is %v: want more than 0 and at most %d", i, r.Seconds, result.MaxSeconds)
		case math.IsNaN(r.Offered) || math.IsInf(r.Offered, 0) || r.Offered < 0:
			return nil, fmt.Errorf("window %d's offered rate is %v: want 0 or more arrivals a second", i, r.Offered)
		case r.Arrivals < 0:
			return nil, fmt.Errorf("window %d's arrivals is %d: want 0 or more", i, r.Arrivals)
		case d.Loop == "closed" && r.Clients < 1:
			return nil, fmt.Errorf("window %d of a closed loop has %d clients: want 1 or more", i, r.Clients)
		case d.Loop == "open" && r.Clients != 0:
			return nil, fmt.Errorf("window %d of an open loop has %d clients: want none (clients are for --closed)", i, r.Clients)
		}
	}
	for _, g := range d.Gauges {
		if g.Window < 0 || g.Window >= len(d.Rows) {
			return nil, fmt.Errorf("the report data has gauges for window %d: want windows 0 to %d", g.Window, len(d.Rows)-1)
		}
	}
	return &d, nil
}

// jsonErr says where a JSON decoding error is, in words.
func jsonErr(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("at byte %s: %v", thousands(se.Offset), se)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s: want a %v", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// Attach joins load's report data to the records it was written with: it
// checks they match (one row a window of the records, and each row's
// arrivals and outcome counts those of its window's records), then takes
// each window's offered rate, length and clients from its row, keeps data
// as d.Data, and drops the warnings that said these were estimated (a
// closed loop's run gets one saying what its latencies cannot show). It
// changes nothing when they do not match.
func (d *Dataset) Attach(data *ReportData) error {
	if d.Format != LoadCSV {
		return fmt.Errorf("load's report data goes with load's records, not with %s", formatName(d.Format))
	}
	if data == nil {
		return errors.New("no report data")
	}
	if len(data.Rows) != len(d.Windows) {
		return fmt.Errorf("the report data has %d windows and the records %d: want the .json load --report wrote beside these records", len(data.Rows), len(d.Windows))
	}
	type counts struct{ arrivals, ok, refused, gaveup, errs, notSent int }
	got := make([]counts, len(d.Windows))
	for _, r := range d.Records {
		c := &got[r.Window]
		c.arrivals++
		switch r.Outcome {
		case result.OK:
			c.ok++
		case result.Refused:
			c.refused++
		case result.Gaveup:
			c.gaveup++
		case result.Error:
			c.errs++
		case result.NotSent:
			c.notSent++
		}
	}
	for i, row := range data.Rows {
		want := counts{row.Arrivals, row.OK, row.Refused, row.Gaveup, row.Error, row.NotSent + row.ClientBusy}
		if got[i] != want {
			return fmt.Errorf("window %d: the report data says %s and the records hold %s: want the .json load --report wrote beside these records", i, countText(want.arrivals, want.ok, want.refused, want.gaveup, want.errs, want.notSent), countText(got[i].arrivals, got[i].ok, got[i].refused, got[i].gaveup, got[i].errs, got[i].notSent))
		}
	}
	for i, row := range data.Rows {
		d.Windows[i].Offered = row.Offered
		d.Windows[i].Seconds = row.Seconds
		d.Windows[i].Clients = row.Clients
	}
	d.Warnings = slices.DeleteFunc(d.Warnings, func(w string) bool {
		return w == warnLoadEstimated || strings.HasPrefix(w, warnLoadClosedPfx)
	})
	if data.Loop == "closed" {
		d.Warnings = append(d.Warnings, warnLoadClosedRun)
	}
	d.Data = data
	return nil
}

func countText(arrivals, ok, refused, gaveup, errs, notSent int) string {
	return fmt.Sprintf("%s arrivals (ok %s, refused %s, gaveup %s, error %s, not sent %s)",
		thousands(int64(arrivals)), thousands(int64(ok)), thousands(int64(refused)), thousands(int64(gaveup)), thousands(int64(errs)), thousands(int64(notSent)))
}
