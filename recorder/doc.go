// Package recorder records the lessons' tables: `server lessons record`
// runs each lab preset of the course through measure.Measure, a lab child
// and a load child of its own exactly as a learner's run is measured, and
// writes the rows into the lesson file as a table with its source and
// fingerprint (lessons.WriteTable; the table format is in package lessons'
// doc). A table's rows are refused when a window lost a request or
// started before the lab had drained.
//
// It also holds the two things pages share with it, so that a learner's
// run of a preset and the preset's recorded table agree: Preset, the one
// mapping from a lesson's lab block to the measure.Preset it runs, and
// RowCells, how a window's row is written in a table. CheckLab checks a
// lab block's settings against what the lab and the generator accept; the
// server loads the course with it (LoadOptions), since the content package
// does not know their limits.
package recorder
