//go:build race

package labsvc_test

// raceDetector reports whether the tests run under the race detector, which
// slows every goroutine of the test binary and of the lab children it
// starts several times over: timing tests say so and skip.
const raceDetector = true
