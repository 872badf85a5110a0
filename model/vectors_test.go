package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"
)

// vectorFile is model/testdata/vectors.json; its format is in the file's
// own "format" field and in doc.go.
type vectorFile struct {
	Tolerance struct {
		Relative float64 `json:"relative"`
		Absolute float64 `json:"absolute"`
	} `json:"tolerance"`
	Vectors []struct {
		Name       string             `json:"name"`
		Why        string             `json:"why"`
		Kind       string             `json:"kind"`
		Solve      string             `json:"solve"`
		Values     map[string]float64 `json:"values"`
		Expect     any                `json:"expect"`
		Targets    []Target           `json:"targets"`
		ExpectGoal any                `json:"expect_goal"`
	} `json:"vectors"`
}

func readVectors(t testing.TB) vectorFile {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("testdata/vectors.json: %v", err)
	}
	if len(f.Vectors) == 0 || f.Tolerance.Relative <= 0 {
		t.Fatalf("testdata/vectors.json has no vectors or no tolerance")
	}
	return f
}

// asJSON turns v into the generic form json.Unmarshal gives, so Go results
// are matched exactly as the JavaScript test matches its JSON.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// match reports every difference between want and got, by the rules in the
// vectors file: objects are subsets, numbers within tolerance.
func match(path string, want, got any, rel, abs float64) []string {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return []string{fmt.Sprintf("%s: got %v, want null", path, got)}
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > abs+rel*math.Abs(w) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, w)}
		}
	case string, bool:
		if got != want {
			return []string{fmt.Sprintf("%s: got %q, want %q", path, fmt.Sprint(got), fmt.Sprint(want))}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %v, want an array of %d", path, got, len(w))}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, match(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], rel, abs)...)
		}
		return diffs
	case map[string]any:
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var diffs []string
		if g, ok := got.([]any); ok {
			for _, k := range keys {
				if k == "$len" {
					diffs = append(diffs, match(path+".$len", w[k], float64(len(g)), 0, 0)...)
					continue
				}
				i, err := strconv.Atoi(k)
				if err != nil || i < 0 || i >= len(g) {
					diffs = append(diffs, fmt.Sprintf("%s[%s]: no such element in %d", path, k, len(g)))
					continue
				}
				diffs = append(diffs, match(fmt.Sprintf("%s[%d]", path, i), w[k], g[i], rel, abs)...)
			}
			return diffs
		}
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v, want an object", path, got)}
		}
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			diffs = append(diffs, match(path+"."+k, w[k], gv, rel, abs)...)
		}
		return diffs
	default:
		return []string{fmt.Sprintf("%s: cannot match %T", path, want)}
	}
	return nil
}

// TestVectors runs every shared vector through Compute and GoalReached.
func TestVectors(t *testing.T) {
	f := readVectors(t)
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			if v.Why == "" || (v.Expect == nil && v.ExpectGoal == nil) {
				t.Fatal("vector needs a why and an expect or expect_goal")
			}
			res, err := Compute(v.Kind, v.Values, v.Solve)
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if v.Expect != nil {
				for _, d := range match("result", v.Expect, asJSON(t, res), f.Tolerance.Relative, f.Tolerance.Absolute) {
					t.Error(d)
				}
			}
			if v.ExpectGoal != nil {
				st := asJSON(t, GoalReached(res.Quantities, v.Targets))
				for _, d := range match("goal", v.ExpectGoal, st, f.Tolerance.Relative, f.Tolerance.Absolute) {
					t.Error(d)
				}
			}
		})
	}
}

// TestMatchCatchesDifferences keeps the matcher honest: it must report a
// wrong number, a wrong string, a missing key, a non-null and a bad length.
func TestMatchCatchesDifferences(t *testing.T) {
	got := map[string]any{"a": 1.0, "s": "x", "n": 2.0, "arr": []any{1.0, 2.0}}
	cases := []struct {
		why  string
		want any
		bad  bool
	}{
		{"a subset that agrees passes", map[string]any{"a": 1.0}, false},
		{"a number within tolerance passes", map[string]any{"a": 1.0 + 1e-12}, false},
		{"a number outside tolerance fails", map[string]any{"a": 1.1}, true},
		{"a different string fails", map[string]any{"s": "y"}, true},
		{"a missing key fails", map[string]any{"zz": 1.0}, true},
		{"null against a number fails", map[string]any{"n": nil}, true},
		{"a wrong $len fails", map[string]any{"arr": map[string]any{"$len": 3.0}}, true},
		{"an index that agrees passes", map[string]any{"arr": map[string]any{"1": 2.0}}, false},
		{"an array of another length fails", map[string]any{"arr": []any{1.0}}, true},
	}
	for _, c := range cases {
		if d := match("r", c.want, got, 1e-9, 1e-9); (len(d) > 0) != c.bad {
			t.Errorf("%s: diffs %v", c.why, d)
		}
	}
}
