//go:build !race

package loadrun

// raceEnabled: the tests are built with the race detector (race_on_test.go).
const raceEnabled = false
