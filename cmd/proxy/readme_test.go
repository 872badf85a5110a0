package main

import (
	"os"
	"testing"
)

// TestREADMEProxyTable keeps the README's table of the proxy's settings in
// step with its flags: every flag, its variable, its default and what it
// allows.
func TestREADMEProxyTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range newProxyFlags().set.CheckTable(string(b), "### `proxy` (`go run ./cmd/proxy`)", nil) {
		t.Error(d)
	}
}
