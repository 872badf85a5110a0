package wsconn

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDocStatesTheTiming checks that the package doc, the one place the
// docs give the websockets' timing in numbers, says what the constants
// are.
func TestDocStatesTheTiming(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", "")), " ")
	for name, d := range map[string]time.Duration{"WriteWait": WriteWait, "PingPeriod": PingPeriod, "PongWait": PongWait, "CloseGrace": CloseGrace} {
		want := fmt.Sprintf("%s (%g s)", name, d.Seconds())
		if !strings.Contains(doc, want) {
			t.Errorf("the package doc does not say %q", want)
		}
	}
	for name, code := range map[string]int{"CloseEnd": CloseEnd, "CloseTooSlow": CloseTooSlow, "CloseGoingAway": CloseGoingAway, "ClosePolicy": ClosePolicy, "CloseTooBig": CloseTooBig} {
		want := fmt.Sprintf("%s (%d)", name, code)
		if !strings.Contains(doc, want) {
			t.Errorf("the package doc does not say %q", want)
		}
	}
}
