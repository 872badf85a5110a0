//go:build race

package loadrun

// raceEnabled: built with the race detector, whose runtime's own locks
// wait by yielding the processor (see dispatcher).
const raceEnabled = true
