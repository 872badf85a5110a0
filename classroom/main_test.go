package classroom

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: Close
// must end every connection, the janitor and the vote writer.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
