package lessons

import (
	"errors"
	"strings"
	"testing"
)

// gatePredict is a predict settled by m-lab (lines 10-19 when it starts
// the body), with a mark reading m-table in its explanation.
const gatePredict = "```predict id=m-p\n" + // 10
	"prompt: What does it deliver at 60?\n" + // 11
	"options:\n" + // 12
	"  - text: About 47\n" + // 13
	"    correct: true\n" + // 14
	"    explain: It delivered [47.1]{= m-table[60].ok_per_sec} a second.\n" + // 15
	"  - text: All 60\n" + // 16
	"    explain: No.\n" + // 17
	"settled_by: m-lab\n" + // 18
	"```\n" // 19

// TestGatesHideWhatSettlesAPredict checks that a Predict's gate is the
// first block after it that measures what settles it, and that a page
// shows parts up to the first gate whose Predict is not answered.
func TestGatesHideWhatSettlesAPredict(t *testing.T) {
	body := gatePredict + "\nThe lab below has four workers.\n\n" + markLab + "\n" + markTable() + "\nIt delivered [47.1]{= m-table[60].ok_per_sec} a second.\n"
	c, err := loadMarks(t, body, LoadOptions{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	l, _ := c.Lesson("a")
	// Body: predict, prose, lab, table, prose.
	kinds := []string{}
	for _, p := range l.Body {
		if p.Block != nil {
			kinds = append(kinds, p.Block.Kind())
		} else {
			kinds = append(kinds, "prose")
		}
	}
	if got := strings.Join(kinds, " "); got != "predict prose lab table prose" {
		t.Fatalf("body = %s", got)
	}
	q, _, _ := c.Question("m-p")
	if g := l.Gate(q); g != 2 {
		t.Errorf("gate of m-p = part %d, want 2 (the lab)", g)
	}
	if qs := l.GatesAfter(2); len(qs) != 1 || qs[0] != q {
		t.Errorf("GatesAfter(2) = %v, want [m-p]", qs)
	}
	cut, by := l.Cut(func(*Question) bool { return false })
	if cut != 2 || by != q {
		t.Errorf("Cut with nothing answered = %d, %v; want 2, m-p", cut, by)
	}
	cut, by = l.Cut(func(*Question) bool { return true })
	if cut != 4 || by != nil {
		t.Errorf("Cut with m-p answered = %d, %v; want 4 (the last part), nil", cut, by)
	}
}

// TestGateMarks checks that a mark reading what settles a Predict is an
// error above the Predict and between it and its gate, and fine in the
// Predict's own explanations, below the gate, and when it reads only the
// schedule (offered, sent) of an open loop.
func TestGateMarks(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want []string
	}{
		{"below the gate", gatePredict + "\n" + markLab + "\n" + markTable() + "\nIt delivered [47.1]{= m-table[60].ok_per_sec} a second.\n", nil},
		{"between the Predict and its gate", gatePredict + "\nIt will deliver [47.1]{= m-table[60].ok_per_sec} a second.\n\n" + markLab + "\n" + markTable(), []string{
			"a.md:21: mark [47.1]{= m-table[60].ok_per_sec} reads m-lab's `ok_per_sec`, between the Predict m-p (line 10) and the lab block m-lab (line 23) that settles it: a learner sees it before answering. Move the sentence below line 23, where the page shows it once the Predict is answered or skipped, or leave the number out",
		}},
		{"above the Predict", "It will deliver [47.1]{= m-table[60].(ok_per_sec)} a second.\n\n" + gatePredict + "\n" + markLab + "\n" + markTable(), []string{
			"a.md:10: mark [47.1]{= m-table[60].(ok_per_sec)} reads m-lab's `ok_per_sec`, above the Predict m-p (line 12) that it settles: a learner sees it before answering. Move the sentence below line 23, where the page shows it once the Predict is answered or skipped, or leave the number out",
		}},
		{"the schedule only", "It sent [200]{= m-table[40].ok} of [200]{= m-lab.seconds * m-table[40].offered}.\n\n" + gatePredict + "\n" + markLab + "\n" + markTable(), []string{
			"a.md:10: mark [200]{= m-table[40].ok} reads m-lab's `ok`, above the Predict m-p (line 12) that it settles: a learner sees it before answering. Move the sentence below line 23, where the page shows it once the Predict is answered or skipped, or leave the number out",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadMarks(t, tc.body, LoadOptions{})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load = %v, want Errors", err)
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
