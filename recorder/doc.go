// Package recorder records the lessons' tables: `server lessons record`
// runs each lab preset of the course through measure.Measure, a lab child
// and a load child of its own exactly as a learner's run is measured, and
// writes the rows into the lesson file as a table with its source and
// fingerprint (lessons.WriteTable; the table format is in package lessons'
// doc). A table's rows are refused when a window lost a request or
// started before the lab had drained.
//
// A recording refuses a busy machine: one whose 1-minute load average is
// above Config.MaxLoad a core at the start, or on which other programs
// (all but the recorder and the preset's two children, read from /proc)
// took more than that while a preset ran. It refuses a preset, too, when
// one of its windows sent more than MaxLateShare (one in twenty) of its
// requests over a millisecond late in each of LateAttempts measurements:
// the generator was held up, and the row would measure it as much as the
// lab. Config.Busy records anyway, and the table's source says BUSY and
// why. Every table one Record call
// writes names the same session in its source.
//
// A preset whose lab block says simulated: true is not measured: it is
// simulated with package sim (SimulatePreset), no child starts, the busy
// checks do not apply, and its source says it was simulated.
//
// It also holds the two things pages share with it, so that a learner's
// run of a preset and the preset's recorded table agree: Preset, the one
// mapping from a lesson's lab block to the measure.Preset it runs (or
// simulates), and RowCells, how a window's row is written in a table.
// CheckLab checks a lab block's settings (its policy among them) against
// what the lab and the generator accept; the server loads the course with
// it (LoadOptions), since the content package does not know their limits.
package recorder
