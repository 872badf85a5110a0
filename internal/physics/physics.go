// Package physics is the switch for the tests that check timing: a lab's
// service time against its knobs, ceilings, knob changes landing at their
// time, the control API under overload, spins sharing a processor, latency
// shapes. Those checks depend on how busy the machine is, so the plain
// `go test ./...` does not run them: a test that holds one starts with
// Require, and runs only when CAPACITYLAB_PHYSICS=1 is set (.ci/run runs
// them in a step of their own, one package at a time).
//
// Call Require in the Test function itself or in a subtest written inside
// it: .ci/run finds the physics tests by that call (and fails if one is in
// a helper), then runs just those.
//
// Under the switch such a test either checks fully or, when it measured
// that the machine could not give it what the check needs (a thread woke
// late, the lab got too little of its processor), calls Skip with what it
// measured. It never passes having checked less.
package physics

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the physics checks on when
// set to "1".
const Env = "CAPACITYLAB_PHYSICS"

// Checked is the line Require logs at the end of a physics test that ran
// its checks and passed; .ci/run counts it.
const Checked = "physics: checked"

// NotChecked begins the reason Skip gives; .ci/run counts and prints it.
const NotChecked = "physics: not checked on this machine: "

// Enabled reports whether the physics checks are switched on.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Require skips t unless the physics checks are switched on. When they
// are, it logs Checked when t ends neither failed nor skipped, so the CI
// step can count the checks that ran.
func Require(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("physics check: runs with " + Env + "=1 (a .ci/run step of its own)")
	}
	t.Cleanup(func() {
		if !t.Failed() && !t.Skipped() {
			t.Log(Checked)
		}
	})
}

// Skip ends a physics test that could not check on this machine, saying
// what it measured, e.g. "the lab got 41% of its processor; the check
// needs 90%".
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skipf(NotChecked+format, args...)
}
