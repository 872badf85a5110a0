package measure

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"capacitylab/affinity"
	"capacitylab/childproc"
	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// Limits of the load child's supervision.
const (
	// HelloTimeout bounds the wait for a load child's hello line.
	HelloTimeout = 10 * time.Second
	// StopGrace is how long a load child told to stop may take to send
	// the cut window and its done line before it is killed.
	StopGrace = 5 * time.Second
	// silenceMargin is how much longer than the drain wait a load child
	// may say nothing before it counts as hung and is killed: while a
	// window runs it reports progress every loadrun.ProgressEvery; between
	// windows it pauses, waits for the lab to drain and resets it, and a
	// slow lab may make the drain's last read and the reset each take a
	// whole control call (loadrun.ControlBudget).
	silenceMargin = 2*loadrun.ControlBudget + 10*time.Second
)

// Config says how Measure starts its two children.
type Config struct {
	Lab  labsvc.ChildCommand // the lab child: a program that runs labsvc.RunChild (the server: itself with "lab-child")
	Load labsvc.ChildCommand // the load child: a program that runs RunLoadChild (the server: itself with "load-child")
	// DrainWait is how long the lab may take to drain its queue before a
	// window; 0 means loadrun.DefaultDrainWait.
	DrainWait time.Duration
	// Generator is the processors the load child is pinned to: those a
	// server keeps free of its own work (affinity.KeepFree). Nil means
	// every processor the calling process may use but the lab's. Either
	// way the lab's are left out.
	Generator []int
}

// Result is what a measurement that ran says about itself, whatever its
// error: how many windows ran to their end and where the children ran.
type Result struct {
	Windows   int   // windows that ran to their end (a window cut short is not counted)
	Lab, Load Child // the two children (zero when they did not start)
}

// generatorCPUs is where a load child beside a lab on lab goes: the
// processors in gen, or when gen is nil every one the calling process may
// use, but lab's. Nil when the lab's processors are unknown or there are
// none left (the child is then not pinned and says why).
func generatorCPUs(gen, lab []int) []int {
	if len(lab) == 0 {
		return nil
	}
	if gen == nil {
		gen, _ = affinity.Allowed()
	}
	var out []int
	for _, c := range gen {
		if !slices.Contains(lab, c) {
			out = append(out, c)
		}
	}
	return out
}

// StartError is a child that did not start: nothing was measured.
type StartError struct {
	Child string // "lab child" or "load child"
	Err   error
}

func (e *StartError) Error() string { return fmt.Sprintf("the %s did not start: %v", e.Child, e.Err) }

// Unwrap returns why.
func (e *StartError) Unwrap() error { return e.Err }

// SweepError is a sweep that the load child reports it could not go on
// with (the lab's control API failed): the rows before it are kept.
type SweepError struct{ Msg string }

func (e *SweepError) Error() string { return e.Msg }

// Measure runs preset p: it starts a lab child with p's knobs, then a load
// child pinned to the processors the lab does not use, which sends p's
// sweep at the lab and streams every window back over a pipe (see the
// package doc), and stops both. handle is called from Measure's goroutine,
// in order: one started event, then while each window runs its progress
// (and a knob event for each of p.At made, and in a run over time a sample
// event for each interval), and as it ends one window event with its row,
// every raw record and its samples. The
// next window begins only once handle has returned from a window event;
// an error from handle stops the measurement (the window in progress is
// cut short and still handed over) and is returned.
//
// Measure never pins the process that calls it nor changes its
// GOMAXPROCS: each child sets its own. Cancelling ctx stops the load child
// (its window in progress is cut short and handed over with Cut set), then
// the lab, and Measure returns ctx's cause. A child that dies is reported
// as a *childproc.ExitError with its exit status and last stderr lines
// (the lab's death first: the load child's failures follow from it); a
// child that does not start as a *StartError; a load child that breaks the
// pipe protocol as a *ProtocolError; a sweep that could not go on as a
// *SweepError. Whatever the error, every window handed over stays handed
// over, and Result says how many ran to their end.
func Measure(ctx context.Context, cfg Config, p Preset, handle func(Event) error) (Result, error) {
	var res Result
	if err := p.Validate(); err != nil {
		return res, err
	}
	// The lab child lives until the load child is done with it, even
	// when ctx ends: cancelling stops the load child first, so the cut
	// window ends cleanly rather than against a killed lab. ctx still
	// stops a lab child that is starting.
	labCtx, labCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer labCancel()
	unwatch := context.AfterFunc(ctx, labCancel)
	lab, err := labsvc.StartChild(labCtx, cfg.Lab, p.Config)
	if !unwatch() && err == nil {
		// ctx ended as the lab came up.
		lab.Stop()
		return res, context.Cause(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		return res, &StartError{Child: "lab child", Err: err}
	}
	defer lab.Stop()
	res.Lab = Child{Pid: lab.Pid(), GoMaxProcs: labsvc.GoMaxProcs(p.Config)}
	res.Lab.CPUs, _ = affinity.ProcessCPUs(lab.Pid()) // nil where it cannot be read: the load child is then not pinned, and says so

	start := startLine{Kind: lineStart, Version: ProtocolVersion, Target: lab.Target(), Control: lab.Control(),
		LabCPUs: res.Lab.CPUs, GeneratorCPUs: generatorCPUs(cfg.Generator, res.Lab.CPUs),
		DrainWaitMS: float64(cfg.DrainWait) / float64(time.Millisecond), Preset: p}
	load, err := startLoadChild(ctx, cfg.Load, start)
	if err != nil {
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		if labErr := lab.Err(); labErr != nil {
			return res, labErr
		}
		return res, &StartError{Child: "load child", Err: err}
	}
	defer load.kill()
	res.Load = load.child

	m := measurement{load: load, lab: lab, labInfo: res.Lab, handle: handle, ctx: ctx, overTime: p.OverTime,
		silence: cmp.Or(cfg.DrainWait, loadrun.DefaultDrainWait) + silenceMargin}
	// The lab's death or ctx's end stop the load child at once, even while
	// the loop waits for handle (storing a window can take a while): the
	// window in progress is cut when it happens, not when it is noticed.
	// The loop records the cause (notice).
	looped := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-lab.Done():
		case <-ctx.Done():
		case <-looped:
			return
		}
		load.send(controlLine{Kind: lineStop})
	}()
	m.run()
	close(looped)
	<-stopped
	res.Windows = m.finished

	// The load child has ended, or is being killed; wait for it.
	select {
	case <-load.done:
	case <-time.After(labsvc.ChildStopTimeout):
		load.kill()
		<-load.done
	}
	// A failure of the lab's control API is usually the symptom of the
	// lab dying: give the death a moment to be seen, so the cause is
	// reported rather than the symptom.
	if m.doneLine != nil && m.doneLine.Error != "" && m.stopCause == nil && lab.Err() == nil {
		select {
		case <-lab.Done():
		case <-time.After(time.Second):
		}
	}
	labErr := lab.Err()
	if err := lab.Stop(); err != nil && labErr == nil {
		labErr = err
	}
	switch {
	case labErr != nil:
		return res, labErr
	case m.handleErr != nil:
		return res, m.handleErr
	case m.protoErr != nil:
		return res, m.protoErr
	case m.doneLine == nil && m.hung:
		return res, &childproc.ExitError{Name: "load child", Pid: load.child.Pid, LastWords: load.stderr.LastLines(childproc.LastLines),
			Err: fmt.Errorf("it said nothing for %v, so it was killed (%v)", m.silence, load.exitErr())}
	case m.doneLine == nil && m.killed:
		return res, fmt.Errorf("%w (the load child had not stopped %v after it was told to, and was killed)", m.stopCause, StopGrace)
	case m.doneLine == nil:
		return res, &childproc.ExitError{Name: "load child", Pid: load.child.Pid, Err: load.exitErr(), LastWords: load.stderr.LastLines(childproc.LastLines)}
	case m.stopCause != nil:
		return res, m.stopCause
	case m.doneLine.Error != "":
		return res, &SweepError{Msg: m.doneLine.Error}
	}
	return res, nil
}

// measurement is Measure's loop over the load child's lines.
type measurement struct {
	ctx     context.Context
	load    *loadChild
	lab     *labsvc.Child
	labInfo Child
	handle  func(Event) error
	// overTime: the preset is a run over time, whose windows' samples
	// must add up to their rows.
	overTime bool

	finished  int
	stopCause error // why the load child was told to stop; nil while it was not
	handleErr error // the first error handle returned
	protoErr  error // the first break of the protocol
	doneLine  *childLine
	records   []result.Record
	samples   []result.Sample // the window in progress's samples so far
	window    int             // the window whose lines come now
	killAt    <-chan time.Time
	killed    bool          // killed after StopGrace
	silence   time.Duration // how long the child may say nothing
	hung      bool          // killed after silence
}

// stop tells the load child to end now, once, for cause, and kills it if
// it has not finished StopGrace later.
func (m *measurement) stop(cause error) {
	if m.stopCause != nil {
		return
	}
	m.stopCause = cause
	m.load.send(controlLine{Kind: lineStop})
	m.killAt = time.After(StopGrace)
}

// broke records a break of the protocol and ends the load child.
func (m *measurement) broke(line int, format string, a ...any) {
	if m.protoErr == nil {
		m.protoErr = &ProtocolError{Line: line, What: fmt.Sprintf(format, a...)}
	}
	if m.stopCause == nil {
		m.stopCause = m.protoErr
	}
	m.load.kill()
}

// handled keeps the first error handle returned and stops for it.
func (m *measurement) handled(err error) {
	if err != nil && m.handleErr == nil {
		m.handleErr = err
		m.stop(err)
	}
}

func (m *measurement) run() {
	m.handled(m.handle(Event{Kind: EventStarted, Lab: m.labInfo, Load: m.load.child}))
	labDone, ctxDone := m.lab.Done(), m.ctx.Done()
	// The silence counts from the last line handled, so the time handle
	// takes is not the child's.
	quiet := time.NewTimer(m.silence)
	defer quiet.Stop()
	for {
		select {
		case l, ok := <-m.load.lines:
			if !ok {
				if err := m.load.readErr(); err != nil && m.protoErr == nil {
					m.broke(m.load.lineNo, "%v", err)
				}
				return
			}
			m.line(l)
			quiet.Reset(m.silence)
		case <-quiet.C:
			m.hung = true
			m.load.kill()
		case <-labDone:
			labDone = nil
			m.notice()
		case <-ctxDone:
			ctxDone = nil
			m.notice()
		case <-m.killAt:
			m.killAt, m.killed = nil, true
			m.load.kill()
		}
	}
}

// notice stops the load child for a lab that died or a ctx that ended,
// if the loop has not seen it yet, so the cause is known before the
// child's next line is taken (the lab's death first).
func (m *measurement) notice() {
	select {
	case <-m.lab.Done():
		m.stop(cmp.Or(m.lab.Err(), errors.New("the lab child exited")))
	default:
	}
	if m.ctx.Err() != nil {
		m.stop(context.Cause(m.ctx))
	}
}

// line handles one line of the load child.
func (m *measurement) line(l numberedLine) {
	m.notice()
	c := l.line
	if m.protoErr != nil {
		return // the child is being killed; nothing it says counts
	}
	if m.doneLine != nil {
		m.broke(l.n, "a %s line after done", c.Kind)
		return
	}
	if c.Kind != lineDone && c.WindowProgress == nil {
		m.broke(l.n, "a %s line without its window", c.Kind)
		return
	}
	switch c.Kind {
	case lineProgress:
		if c.Window != m.window {
			m.broke(l.n, "progress of window %d during window %d", c.Window, m.window)
			return
		}
		if m.stopCause == nil {
			m.handled(m.handle(Event{Kind: EventProgress, WindowProgress: *c.WindowProgress}))
		}
	case lineKnob:
		if c.Window != m.window || c.Change == "" {
			m.broke(l.n, "a knob line that is not a change in window %d", m.window)
			return
		}
		if m.stopCause == nil {
			m.handled(m.handle(Event{Kind: EventKnob, WindowProgress: *c.WindowProgress, Change: c.Change}))
		}
	case lineSample:
		if !m.sampleFits(c) {
			m.broke(l.n, "a sample line that is not window %d's next sample (at %.3f s)", m.window, m.sampledTo())
			return
		}
		m.samples = append(m.samples, *c.Sample)
		if m.stopCause == nil {
			m.handled(m.handle(Event{Kind: EventSample, WindowProgress: *c.WindowProgress, Sample: c.Sample}))
		}
	case lineRecords:
		if c.Window != m.window {
			m.broke(l.n, "records of window %d during window %d", c.Window, m.window)
			return
		}
		for _, w := range c.Records {
			if w.Seq != len(m.records) {
				m.broke(l.n, "window %d: record seq %d where %d was due", m.window, w.Seq, len(m.records))
				return
			}
			m.records = append(m.records, fromWire(m.window, w))
		}
	case lineRow:
		switch {
		case c.Row == nil || c.Window != m.window || c.Row.Window != m.window:
			m.broke(l.n, "a row line that is not window %d's row", m.window)
			return
		case c.Row.Arrivals+c.Row.Attempts-c.Row.Sent != len(m.records):
			// Every request the generator sends is accounted for: a
			// row counts its arrivals, each one has its record, and so
			// has each retry (attempts beyond the first of each request
			// sent).
			m.broke(l.n, "window %d's row counts %d arrivals and %d retries but %d records came", m.window, c.Row.Arrivals, c.Row.Attempts-c.Row.Sent, len(m.records))
			return
		case m.overTime && !c.Cut && !samplesAddUp(m.samples, *c.Row):
			// A run over time accounts for every arrival in its samples
			// too.
			m.broke(l.n, "window %d's samples do not add up to its row", m.window)
			return
		}
		ev := Event{Kind: EventWindow, WindowProgress: *c.WindowProgress, Row: c.Row, Records: m.records, Samples: m.samples}
		if c.Cut && m.stopCause == nil {
			// The load child cut the window on its own: the lab stopped
			// answering after the window's requests ended. When the lab
			// died, that is seen within a moment, and is the cause.
			select {
			case <-m.lab.Done():
			case <-time.After(time.Second):
			}
			m.notice()
		}
		if c.Cut {
			ev.Cut = m.stopCause
			if ev.Cut == nil {
				ev.Cut = errors.New("the load child cut the window short")
			}
		} else {
			m.finished++
		}
		m.records, m.samples = nil, nil
		m.handled(m.handle(ev))
		// A lab that died or a ctx that ended while the window was
		// handled has not been seen by the loop yet.
		m.notice()
		if m.stopCause == nil {
			m.load.send(controlLine{Kind: lineNext, Window: m.window})
		}
		m.window++
	case lineDone:
		m.doneLine = &c
	default:
		m.broke(l.n, "unknown kind %q", c.Kind)
	}
}

// loadChild is a running load child, as its parent sees it.
type loadChild struct {
	cmd    *exec.Cmd
	child  Child
	in     *lineWriter
	stdin  io.Closer
	lines  chan numberedLine // closed at the end of its stdout or at a line that is not JSON
	lineNo int               // lines read so far; read after lines is closed
	rerr   error             // why reading stopped early; read after lines is closed
	stderr *childproc.Tail
	done   chan struct{} // closed once it has exited and been waited for
	werr   error         // from Wait; read after done is closed
	once   sync.Once
}

// numberedLine is one line of a load child with its number, from 1.
type numberedLine struct {
	n    int
	line childLine
}

// startLoadChild starts a load child, writes its start line and waits for
// its hello.
func startLoadChild(ctx context.Context, cc labsvc.ChildCommand, start startLine) (*loadChild, error) {
	if cc.Path == "" {
		return nil, errors.New("measure: Config.Load.Path is empty: want the program that runs a load child")
	}
	cmd := exec.Command(cc.Path, cc.Args...)
	cmd.Env = append(os.Environ(), cc.Env...)
	cmd.SysProcAttr = childproc.Attr()
	cmd.WaitDelay = time.Second
	c := &loadChild{cmd: cmd, stderr: &childproc.Tail{}, lines: make(chan numberedLine, 64), done: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own for stdout, not cmd.StdoutPipe, which Wait closes
	// as soon as the child exits: the child's last lines (its done line)
	// must be read to the end whenever the child exits.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	c.stdin, c.in = stdin, newLineWriter(stdin)
	c.child.Pid = cmd.Process.Pid
	go c.read(stdout)
	go func() {
		c.werr = cmd.Wait()
		close(c.done)
	}()
	c.send(start)

	fail := func(why error) (*loadChild, error) {
		c.kill()
		<-c.done
		go func() {
			for range c.lines {
			}
		}()
		return nil, fmt.Errorf("%v (pid %d); last words: %s", why, c.child.Pid, c.stderr.LastLines(childproc.LastLines))
	}
	timer := time.NewTimer(HelloTimeout)
	defer timer.Stop()
	select {
	case l, ok := <-c.lines:
		switch {
		case !ok:
			<-c.done
			return fail(fmt.Errorf("it exited before its hello (%v)", c.exitErr()))
		case l.line.Kind != lineHello:
			return fail(fmt.Errorf("its first line was %q, not its hello", l.line.Kind))
		case l.line.Version != ProtocolVersion:
			return fail(fmt.Errorf("it speaks protocol version %d, this parent %d", l.line.Version, ProtocolVersion))
		}
		c.child = Child{Pid: c.child.Pid, CPUs: slices.Clone(l.line.CPUs), GoMaxProcs: l.line.GoMaxProcs, Note: l.line.Pinning}
		return c, nil
	case <-timer.C:
		return fail(fmt.Errorf("no hello after %v", HelloTimeout))
	case <-ctx.Done():
		return fail(context.Cause(ctx))
	}
}

// read passes the child's stdout on, line by line, until it ends or a line
// is not JSON, then closes it.
func (c *loadChild) read(stdout io.ReadCloser) {
	defer close(c.lines)
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		c.lineNo++
		var l childLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			c.rerr = fmt.Errorf("not a JSON line (%v): %.120q", err, sc.Bytes())
			return
		}
		c.lines <- numberedLine{n: c.lineNo, line: l}
	}
	if err := sc.Err(); err != nil {
		c.lineNo++
		c.rerr = err
	}
}

// readErr is why reading stopped before the end of stdout, or nil.
func (c *loadChild) readErr() error { return c.rerr }

// send writes one line to the child; a child that is gone is noticed by
// its stdout ending, so the error is not kept.
func (c *loadChild) send(v any) { _ = c.in.send(v) }

// kill ends the child at once, if it has not ended (it is waited for by
// its own goroutine), and closes its stdin.
func (c *loadChild) kill() {
	c.once.Do(func() { c.stdin.Close() })
	select {
	case <-c.done:
	default:
		_ = c.cmd.Process.Kill()
	}
}

// exitErr is how the child ended: its Wait error, or "exit status 0".
func (c *loadChild) exitErr() error {
	select {
	case <-c.done:
	default:
		return errors.New("still running")
	}
	if c.werr == nil {
		return errors.New("exit status 0 without its done line")
	}
	return c.werr
}

// sampledTo is where the window in progress's samples so far end, in
// seconds from its start.
func (m *measurement) sampledTo() float64 {
	if n := len(m.samples); n > 0 {
		return m.samples[n-1].AtS + m.samples[n-1].Seconds
	}
	return 0
}

// sampleFits reports whether c is the window in progress's next sample:
// the preset asked for samples, and the sample is of this window and
// begins where the last one ended (at 0 for the first).
func (m *measurement) sampleFits(c childLine) bool {
	return m.overTime && c.Sample != nil && c.Window == m.window && c.Sample.Window == m.window &&
		c.Sample.Seconds >= 0 && math.Abs(c.Sample.AtS-m.sampledTo()) < 1e-6
}

// samplesAddUp reports whether a window's samples count every arrival of
// its row once: their ok, refused, gave up, errors, client busy and not
// sent add up to the row's.
func samplesAddUp(samples []result.Sample, row result.Row) bool {
	var ok, refused, gaveup, errs, busy, notSent int
	for _, s := range samples {
		ok, refused, gaveup, errs, busy, notSent = ok+s.OK, refused+s.Refused, gaveup+s.GaveUp, errs+s.Errors, busy+s.ClientBusy, notSent+s.NotSent
	}
	return ok == row.OK && refused == row.Refused && gaveup == row.Gaveup && errs == row.Error && busy == row.ClientBusy && notSent == row.NotSent
}
