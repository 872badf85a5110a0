package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: run must
// stop everything it started when its context ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
