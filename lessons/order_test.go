package lessons

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func optionIDsOf(os []Option) string {
	ids := make([]string, len(os))
	for i, o := range os {
		ids[i] = o.ID
	}
	return strings.Join(ids, "")
}

// Order is a permutation that depends only on the key and the question:
// the same key gives the same order every time, every option is kept with
// its id, and over many keys every option leads about as often.
func TestOrder(t *testing.T) {
	q := &Question{ID: "q1", Type: "predict"}
	for _, id := range []string{"a", "b", "c", "d"} {
		q.Options = append(q.Options, Option{ID: id, Text: "option " + id})
	}
	first := map[string]int{}
	orders := map[string]bool{}
	const keys = 4000
	for i := range keys {
		key := fmt.Sprintf("learner-%d", i)
		got := q.Order(key)
		if again := q.Order(key); optionIDsOf(again) != optionIDsOf(got) {
			t.Fatalf("key %s: order %s, then %s", key, optionIDsOf(got), optionIDsOf(again))
		}
		ids := strings.Split(optionIDsOf(got), "")
		slices.Sort(ids)
		if strings.Join(ids, "") != "abcd" {
			t.Fatalf("key %s: order %s is not a permutation of abcd", key, optionIDsOf(got))
		}
		for _, o := range got {
			if o.Text != "option "+o.ID {
				t.Fatalf("key %s: option %s carries text %q", key, o.ID, o.Text)
			}
		}
		first[got[0].ID]++
		orders[optionIDsOf(got)] = true
	}
	// Each of 4 options leads a quarter of the time: 1000 of 4000, with a
	// standard deviation of about 27; 850 to 1150 is over five of them.
	for _, id := range []string{"a", "b", "c", "d"} {
		if n := first[id]; n < 850 || n > 1150 {
			t.Errorf("option %s comes first for %d of %d keys, want about %d", id, n, keys, keys/4)
		}
	}
	if len(orders) != 24 {
		t.Errorf("%d keys gave %d distinct orders, want all 24", keys, len(orders))
	}
	// The order depends on the question too: one key does not put every
	// question's options in the same places.
	q2 := &Question{ID: "q2", Options: q.Options}
	same := 0
	for i := range 200 {
		key := fmt.Sprintf("learner-%d", i)
		if optionIDsOf(q.Order(key)) == optionIDsOf(q2.Order(key)) {
			same++
		}
	}
	if same > 40 {
		t.Errorf("questions q1 and q2 share their order for %d of 200 keys, want about 200/24", same)
	}
	// The original slice is not touched.
	if optionIDsOf(q.Options) != "abcd" {
		t.Errorf("Order changed q.Options to %s", optionIDsOf(q.Options))
	}
}

// The permutation is fixed by its documented construction: these orders
// must never change, or every learner's options would move under them.
func TestOrderStable(t *testing.T) {
	q := &Question{ID: "littles-double", Options: []Option{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}}
	for key, want := range map[string]string{
		"":                                 "bdca",
		"0123456789abcdef0123456789abcdef": "adcb",
		"ABC123":                           "dcab",
	} {
		if got := optionIDsOf(q.Order(key)); got != want {
			t.Errorf("Order(%q) = %s, want %s", key, got, want)
		}
	}
}
