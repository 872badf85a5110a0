//go:build !race

package loadrun

// raceEnabled: built with the race detector (race_on.go).
const raceEnabled = false
