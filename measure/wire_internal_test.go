package measure

import (
	"bytes"
	"encoding/json"
	"testing"

	"capacitylab/labsvc"
)

// A preset's retrying client and classes survive the start line, read as
// the load child reads it (unknown fields refused), into the sweep it runs.
func TestStartLineCarriesRetryAndClasses(t *testing.T) {
	p := Preset{Config: labsvc.DefaultConfig(), Rates: []float64{40}, Seconds: 1, Seed: 2,
		Retry: "retries=3,backoff=jitter,budget=0.1", Critical: 0.25, Sheddable: 0.5}
	b, err := json.Marshal(startLine{Kind: lineStart, Version: ProtocolVersion, Preset: p})
	if err != nil {
		t.Fatal(err)
	}
	var got startLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	sw := got.Preset.Sweep()
	if sw.Retry.String() != p.Retry || sw.Critical != 0.25 || sw.Sheddable != 0.5 {
		t.Errorf("the child's sweep has retry %q, critical %g, sheddable %g; want %q, 0.25, 0.5 (start line %s)", sw.Retry, sw.Critical, sw.Sheddable, p.Retry, b)
	}
}
