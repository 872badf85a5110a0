package measure

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"capacitylab/result"
)

// ProtocolVersion is the version of the load child's pipe protocol (see
// the package doc). A parent and a child that speak different versions
// refuse each other before anything is sent.
const ProtocolVersion = 5

// Sizes of the pipe protocol.
const (
	// recordsPerLine is how many raw records one records line carries.
	recordsPerLine = 1000
	// maxLine bounds one line from a load child: a records line of
	// recordsPerLine records is about 150 KB.
	maxLine = 4 << 20
)

// Kinds of the lines on the pipe (see the package doc).
const (
	lineStart    = "start"
	lineNext     = "next"
	lineStop     = "stop"
	lineHello    = "hello"
	lineProgress = "progress"
	lineKnob     = "knob"
	lineSample   = "sample"
	lineRecords  = "records"
	lineRow      = "row"
	lineDone     = "done"
)

// startLine is the first line a parent writes to a load child.
type startLine struct {
	Kind          string  `json:"kind"`
	Version       int     `json:"version"`
	Target        string  `json:"target"`         // the lab's request address, http://127.0.0.1:port
	Control       string  `json:"control"`        // the lab's control API
	LabCPUs       []int   `json:"lab_cpus"`       // the lab's processors (none: unknown)
	GeneratorCPUs []int   `json:"generator_cpus"` // the processors to pin to (none: not pinned)
	DrainWaitMS   float64 `json:"drain_wait_ms"`  // 0: loadrun.DefaultDrainWait
	Preset        Preset  `json:"preset"`         // what to send: its sweep (the knobs are the lab's)
}

// controlLine is every later line a parent writes: next (window W is
// taken: begin the next one) or stop.
type controlLine struct {
	Kind   string `json:"kind"`
	Window int    `json:"window,omitempty"`
}

// childLine is one line a load child writes: hello, progress, knob,
// sample, records, row or done. The fields each kind carries are in the package doc.
type childLine struct {
	Kind string `json:"kind"`

	// hello
	Version    int    `json:"version,omitempty"`
	Pid        int    `json:"pid,omitempty"`
	CPUs       []int  `json:"cpus,omitempty"`
	GoMaxProcs int    `json:"gomaxprocs,omitempty"`
	Pinning    string `json:"pinning,omitempty"`

	// progress, records, row, done
	*result.WindowProgress

	Records []wireRecord   `json:"records,omitempty"` // records
	Row     *result.Row    `json:"row,omitempty"`     // row
	Change  string         `json:"change,omitempty"`  // knob: the change made (result.KnobChange)
	Sample  *result.Sample `json:"sample,omitempty"`  // sample: one interval of the window
	Cut     bool           `json:"cut,omitempty"`     // row: the window was cut short
	Error   string         `json:"error,omitempty"`   // done: why the sweep failed or stopped
}

// wireRecord is a raw record on the pipe; times are nanoseconds from the
// window's start.
type wireRecord struct {
	Seq         int            `json:"seq"`
	Intended    int64          `json:"intended_ns"`
	Sent        int64          `json:"sent_ns"`
	End         int64          `json:"end_ns"`
	Outcome     result.Outcome `json:"outcome"`
	Status      int            `json:"status,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	QueueWaitMS float64        `json:"queue_wait_ms"`
	ServiceMS   float64        `json:"service_ms"`
	Request     int            `json:"request,omitempty"`
	Attempt     int            `json:"attempt,omitempty"`
	Class       result.Class   `json:"class,omitempty"`
	Sub         int            `json:"sub,omitempty"`
	Copy        int            `json:"copy,omitempty"`
}

func toWire(r result.Record) wireRecord {
	return wireRecord{Seq: r.Seq, Intended: int64(r.Intended), Sent: int64(r.Sent), End: int64(r.End), Outcome: r.Outcome,
		Status: r.Status, Reason: r.Reason, QueueWaitMS: r.QueueWaitMS, ServiceMS: r.ServiceMS,
		Request: r.Request, Attempt: r.Attempt, Class: r.Class, Sub: r.Sub, Copy: r.Copy}
}

func fromWire(window int, w wireRecord) result.Record {
	return result.Record{Window: window, Seq: w.Seq, Intended: time.Duration(w.Intended), Sent: time.Duration(w.Sent), End: time.Duration(w.End),
		Outcome: w.Outcome, Status: w.Status, Reason: w.Reason, QueueWaitMS: w.QueueWaitMS, ServiceMS: w.ServiceMS,
		Request: w.Request, Attempt: w.Attempt, Class: w.Class, Sub: w.Sub, Copy: w.Copy}
}

// lineWriter writes JSON lines, one at a time, each flushed at once.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
}

func newLineWriter(w io.Writer) *lineWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &lineWriter{w: bw, enc: json.NewEncoder(bw)}
}

// send writes v as one line and flushes it.
func (lw *lineWriter) send(v any) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.enc.Encode(v); err != nil {
		return err
	}
	return lw.w.Flush()
}

// ProtocolError is a line from a load child that breaks the pipe protocol:
// not JSON, a kind out of place, or a window whose records do not account
// for every arrival of its row. The measurement stops there.
type ProtocolError struct {
	Line int    // the line's number, from 1
	What string // what is wrong with it
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("the load child broke the pipe protocol at line %d: %s", e.Line, e.What)
}
