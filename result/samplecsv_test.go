package result

import (
	"reflect"
	"strings"
	"testing"
)

// A sample written as cells reads back the same; tables may leave columns
// out or reorder them after window, at_s; bad cells are named.
func TestSampleCellsRoundTrip(t *testing.T) {
	in := []Sample{
		{Window: 0, AtS: 0, Seconds: 1, OK: 48, Refused: 1, GaveUp: 2, Errors: 3, ClientBusy: 4, NotSent: 5, P50MS: 100.5, P99MS: 120,
			InFlight: 6, Lab: true, Queued: 7, InService: 8, Limit: 9, Dropped: 10},
		{Window: 1, AtS: 29, Seconds: 0.25, GaveUp: 1},
	}
	var rows [][]string
	for _, s := range in {
		rows = append(rows, s.Cells())
	}
	if len(rows[0]) != len(SampleColumns()) {
		t.Fatalf("%d cells, %d columns", len(rows[0]), len(SampleColumns()))
	}
	got, err := ParseSamples(SampleColumns(), rows)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, in)
	}

	// A table of some columns: no lab column, so a queue read means the lab was read, "—" that it was not; no seconds, so each lasts to the next.
	got, err = ParseSamples([]string{"window", "at_s", "p99_ms", "queued", "ok"}, [][]string{{"0", "0", "—", "3", "10"}, {"0", "1", "250", "—", "0"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{{AtS: 0, Seconds: 1, Lab: true, Queued: 3, OK: 10}, {AtS: 1, Seconds: 1, P99MS: 250}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}

	for _, tt := range []struct {
		cols []string
		rows [][]string
		want string
	}{
		{[]string{"at_s", "window"}, nil, "begin with window, at_s"},
		{[]string{"window", "at_s", "ok"}, [][]string{{"0", "0", "x"}}, `row 1, column ok: "x" is not a number`},
		{[]string{"window", "at_s", "lab"}, [][]string{{"0", "0", "yes"}}, "column lab"},
	} {
		if _, err := ParseSamples(tt.cols, tt.rows); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSamples(%v, %v) = %v, want an error saying %q", tt.cols, tt.rows, err, tt.want)
		}
	}
}
