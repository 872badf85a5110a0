//go:build !linux

package loadrun

import "testing"

// voluntarySwitches is 0 where a thread's context switches are not read
// (BenchmarkLagSources needs Linux's per-thread counters anyway).
func voluntarySwitches(*testing.B) int64 { return 0 }
