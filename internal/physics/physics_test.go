package physics_test

import (
	"testing"

	"capacitylab/internal/physics"
)

// Require skips unless the switch is set to exactly "1".
func TestRequireFollowsTheSwitch(t *testing.T) {
	for _, v := range []string{"", "0", "yes", "1"} {
		t.Setenv(physics.Env, v)
		var skipped bool
		ran := t.Run("value "+v, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			physics.Require(t)
		})
		if want := v != "1"; skipped != want || !ran {
			t.Errorf("%s=%q: skipped %v, want %v", physics.Env, v, skipped, want)
		}
	}
}
