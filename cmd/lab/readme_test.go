package main

import (
	"os"
	"testing"

	"capacitylab/labsvc"
)

// TestREADMELabTable keeps the README's table of the lab's settings in
// step with its flags: every flag, its variable, its default and what it
// allows.
func TestREADMELabTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range labsvc.Flags().CheckTable(string(b), "### `lab` (`go run ./cmd/lab`)", nil) {
		t.Error(d)
	}
}
