//go:build !race

package labsvc_test

// raceDetector reports whether the tests run under the race detector (see
// race_on_test.go).
const raceDetector = false
