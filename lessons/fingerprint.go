package lessons

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// FixturePart is the front-matter part of lessons that hold test fixtures;
// only their tables may say fixture: true instead of carrying a fingerprint.
const FixturePart = "Fixtures"

// fingerprintVersion starts the canonical text, so a later change to what
// is hashed cannot match a fingerprint made the old way by accident.
const fingerprintVersion = "capacitylab table v1"

// Fingerprint returns the hex SHA-256 of a table's canonical text: the
// preset's settings (every knob, rates, seconds, seed, closed, timeout_ms),
// the column headings, every cell and the source line. The caption is not
// covered, so an author may reword it. `server lessons record` writes it
// into each table; the loader recomputes it from the lab block and the
// table as written. It detects a number edited by hand, a row added or
// dropped, an edited source, and a preset changed after its table was
// recorded; it is a check on honest mistakes, not a signature (anyone can
// compute it).
func Fingerprint(preset *Lab, columns []string, rows [][]string, source string) string {
	var b strings.Builder
	b.WriteString(fingerprintVersion)
	b.WriteByte('\n')
	b.WriteString(canonicalPreset(preset))
	b.WriteByte('\n')
	line := func(tag string, fields []string) {
		b.WriteString(tag)
		for _, f := range fields {
			b.WriteByte(' ')
			b.WriteString(strconv.Quote(f))
		}
		b.WriteByte('\n')
	}
	line("columns", columns)
	for _, r := range rows {
		line("row", r)
	}
	line("source", []string{source})
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// canonicalPreset writes every setting of a lab preset in a fixed order
// and number format, e.g.
// "preset workers=1 spin_ms=2 wait_ms=18 limit=0 cpus=1 rates=10,20 seconds=5 seed=1 closed=0 timeout_ms=0",
// followed by " stall_every=N stall_ms=M" when either is set, " rng=R"
// when rng is given, and " backlog=N", " accept=workers", " policy=P"
// (the policy as its canonical Spec), " simulated", " max_inflight=N",
// " at=C;C", " over_time", " retry=SPEC" (retry.Spec.String's form),
// " critical=S" and " sheddable=S", " clients=N,N" (a closed loop of
// more than one window), " dist=D" (its canonical Spec), " lock_ms=N" and
// " coherency_us=N", " fanout=K" (more than 1) and " hedge=SPEC" only
// when the preset sets them (so the form of every
// preset written before they existed is unchanged). The id is left out: renaming a preset does not change what
// was measured.
func canonicalPreset(l *Lab) string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	rates := make([]string, len(l.Rates))
	for i, r := range l.Rates {
		rates[i] = num(r)
	}
	return "preset workers=" + strconv.Itoa(l.Workers) +
		" spin_ms=" + strconv.Itoa(l.SpinMS) +
		" wait_ms=" + strconv.Itoa(l.WaitMS) +
		" limit=" + strconv.Itoa(l.Limit) +
		" cpus=" + strconv.Itoa(l.CPUs) +
		" rates=" + strings.Join(rates, ",") +
		" seconds=" + num(l.Seconds) +
		" seed=" + strconv.FormatInt(l.Seed, 10) +
		" closed=" + strconv.Itoa(l.Closed) +
		" timeout_ms=" + strconv.Itoa(l.TimeoutMS) +
		optional(l.StallEvery != 0 || l.StallMS != 0, " stall_every="+strconv.Itoa(l.StallEvery)+" stall_ms="+strconv.Itoa(l.StallMS)) +
		optional(l.RNG != "", " rng="+l.RNG) +
		optional(l.Backlog != 0, " backlog="+strconv.Itoa(l.Backlog)) +
		optional(l.Accept != "", " accept="+l.Accept) +
		optional(l.Policy != "", " policy="+string(l.Policy)) +
		optional(l.Simulated, " simulated") +
		optional(l.MaxInFlight != 0, " max_inflight="+strconv.Itoa(l.MaxInFlight)) +
		optional(len(l.At) > 0, " at="+strings.Join(l.At, ";")) +
		optional(l.OverTime, " over_time") +
		optional(l.Retry != "", " retry="+l.Retry) +
		optional(l.Critical != 0, " critical="+num(l.Critical)) +
		optional(l.Sheddable != 0, " sheddable="+num(l.Sheddable)) +
		optional(len(l.Clients) > 1, " clients="+strings.ReplaceAll(ClientList(l.Clients), ", ", ",")) +
		optional(l.Dist != "", " dist="+string(l.Dist)) +
		optional(l.LockMS != 0, " lock_ms="+strconv.Itoa(l.LockMS)) +
		optional(l.CoherencyUS != 0, " coherency_us="+strconv.Itoa(l.CoherencyUS)) +
		optional(l.Fanout > 1, " fanout="+strconv.Itoa(l.Fanout)) +
		optional(l.Hedge != "", " hedge="+l.Hedge)
}

func optional(given bool, s string) string {
	if given {
		return s
	}
	return ""
}

// checkTables checks each table of a lesson against its preset: a table
// carries a fingerprint that matches its preset and rows, or (in a
// fixtures lesson only) says fixture: true. Presets that are missing or not
// lab blocks are reported by checkRefs.
func (fp *fileParser) checkTables(l *Lesson, tables []*tableAt) {
	for _, ta := range tables {
		t := ta.table
		what := "table " + strconv.Quote(t.ID)
		if t.Pending || fp.opts.noPrints {
			continue // reported by table, or the recorder is about to replace it
		}
		if t.Fixture {
			if l.Part != FixturePart {
				fp.p.add(ta.fixtureLine, "%s: fixture: true is allowed only in lessons whose part is %q: a course table is recorded with `server lessons record`", what, FixturePart)
			}
			if t.Fingerprint != "" {
				fp.p.add(ta.fingerprintLine, "%s: a fixture table has no fingerprint: remove one of fixture and fingerprint", what)
			}
			continue
		}
		b, ok := l.Block(t.Preset)
		lab, isLab := b.(*Lab)
		if !ok || !isLab {
			continue // reported by checkRefs, or the lab block did not parse
		}
		if t.Fingerprint == "" {
			fp.p.add(t.Line, "%s: fingerprint is missing: tables hold recorded numbers only; record it with `server lessons record --lab %s` instead of typing it", what, t.Preset)
			continue
		}
		if !validFingerprint(t.Fingerprint) {
			fp.p.add(ta.fingerprintLine, "%s: fingerprint %q is not allowed: want the 64 hex digits `server lessons record` writes", what, t.Fingerprint)
			continue
		}
		if Fingerprint(lab, t.Columns, t.Rows, t.Source) != t.Fingerprint {
			fp.p.add(t.Line, "%s: fingerprint does not match: the rows, columns or source were edited by hand, the preset %q (line %d) changed after recording, or it was a --seconds-scale trial; record it again with `server lessons record --lab %s`", what, t.Preset, lab.Line, t.Preset)
		}
	}
}

// tableAt is a parsed table with the lines of fields checkTables names.
type tableAt struct {
	table           *Table
	fingerprintLine int
	fixtureLine     int
}

func validFingerprint(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
