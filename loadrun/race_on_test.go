//go:build race

package loadrun

// raceEnabled: the tests are built with the race detector, whose slower
// runtime beside the whole module's tests moves timing (see
// acceptance_test.go).
const raceEnabled = true
