package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"capacitylab/labsvc"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMELoadTable keeps the README's table of load's settings in step
// with its flags. The lab's knobs, which only --simulate reads, are the
// lab's table's.
func TestREADMELoadTable(t *testing.T) {
	fs, _, _, _ := loadFlags()
	var knobs []string
	for _, st := range labsvc.Flags().Settings() {
		knobs = append(knobs, st.Flag)
	}
	knob := func(name string) bool { return slices.Contains(knobs, name) && name != "control" && name != "addr" }
	for _, d := range fs.CheckTable(readme(t), "### `load` (`go run ./cmd/load`)", knob) {
		t.Error(d)
	}
}

// TestREADMELoadColumns checks that the README lists every column load
// prints, in the order it prints them.
func TestREADMELoadColumns(t *testing.T) {
	_, rest, ok := strings.Cut(readme(t), "| column | what it is |")
	if !ok {
		t.Fatal("README has no table of load's columns")
	}
	var listed []string
	for line := range strings.SplitSeq(rest, "\n") {
		if strings.HasPrefix(line, "| `") {
			listed = append(listed, strings.Trim(strings.Fields(line)[1], "`"))
		} else if line != "" && !strings.HasPrefix(line, "|") {
			break
		}
	}
	if want := columns(true); !slices.Equal(listed, want) {
		t.Errorf("README lists the columns\n%v\nload prints (closed loop)\n%v", listed, want)
	}
}
