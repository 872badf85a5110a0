package measure

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"capacitylab/affinity"
	"capacitylab/childproc"
	"capacitylab/loadrun"
	"capacitylab/result"
)

// errStopped is why a load child stops when its parent says stop (or
// closes its stdin).
var errStopped = errors.New("the parent stopped the measurement")

// RunLoadChild is the body of a load child process: it reads the start
// line on stdin, pins every thread of its own process to the processors
// the lab does not use (for good: it never puts them back), sets GOMAXPROCS
// to loadrun.GoMaxProcs of them, says hello on stdout, runs the preset's sweep at the
// lab with Generate and reports it on stdout line by line, as the package
// doc specifies. It returns nil once it has written its done line, even
// when the sweep failed (the done line says why); an error means the
// protocol could not be kept (a bad start line, a broken stdout). The
// caller is the child's main (cmd/server's and cmd/load's hidden
// "load-child" subcommand, or ChildMain), which should end ctx on SIGTERM.
func RunLoadChild(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	in := bufio.NewReaderSize(stdin, 4<<10)
	first, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("load child: no start line on stdin: %w", err)
	}
	var start startLine
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&start); err != nil || start.Kind != lineStart {
		return fmt.Errorf("load child: the first line on stdin is not a start line (%v): %.200q", err, first)
	}
	if start.Version != ProtocolVersion {
		return fmt.Errorf("load child: the parent speaks protocol version %d, this child %d", start.Version, ProtocolVersion)
	}
	if err := start.Preset.Validate(); err != nil {
		return fmt.Errorf("load child: the preset cannot be sent: %w", err)
	}
	sw := start.Preset.Sweep()
	if sw.Target, err = loadrun.NewTarget(start.Target, start.Preset.Timeout()); err != nil {
		return fmt.Errorf("load child: %w", err)
	}
	control, err := loadrun.NewControl(start.Control, nil)
	if err != nil {
		return fmt.Errorf("load child: %w", err)
	}
	sw.Control = &control
	sw.DrainWait = time.Duration(start.DrainWaitMS * float64(time.Millisecond))

	hello := childLine{Kind: lineHello, Version: ProtocolVersion, Pid: os.Getpid()}
	hello.CPUs, hello.Pinning = pinAway(start.LabCPUs)
	hello.GoMaxProcs = runtime.GOMAXPROCS(0)
	hello.Nice, hello.RTPriority, hello.Priority = raisePriority(len(hello.CPUs) > 0)
	out := newLineWriter(stdout)
	if err := out.send(hello); err != nil {
		return fmt.Errorf("load child: writing hello: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The parent's later lines: next after each window it has taken,
	// stop (or the end of stdin) to end the measurement now.
	next := make(chan int, 1)
	go func() {
		for {
			b, err := in.ReadBytes('\n')
			if err != nil {
				cancel(errStopped)
				return
			}
			var c controlLine
			if json.Unmarshal(b, &c) != nil || (c.Kind != lineNext && c.Kind != lineStop) {
				fmt.Fprintf(stderr, "load child: a line on stdin is neither next nor stop: %.200q\n", b)
				cancel(errStopped)
				return
			}
			if c.Kind == lineStop {
				cancel(errStopped)
				return
			}
			select {
			case next <- c.Window:
			default:
			}
		}
	}()

	werr := error(nil) // the first failure to write to stdout
	sent := func(err error) error {
		if err != nil && werr == nil {
			werr = err
		}
		return err
	}
	runErr := Generate(ctx, sw, func(e Event) error {
		switch e.Kind {
		case EventProgress:
			return sent(out.send(childLine{Kind: lineProgress, WindowProgress: &e.WindowProgress}))
		case EventKnob:
			return sent(out.send(childLine{Kind: lineKnob, WindowProgress: &e.WindowProgress, Change: e.Change}))
		case EventSample:
			return sent(out.send(childLine{Kind: lineSample, WindowProgress: &e.WindowProgress, Sample: e.Sample}))
		case EventWindow:
			w := e.Window
			for i := 0; i < len(e.Records); i += recordsPerLine {
				chunk := e.Records[i:min(i+recordsPerLine, len(e.Records))]
				wire := make([]wireRecord, len(chunk))
				for j, r := range chunk {
					wire[j] = toWire(r)
				}
				if err := sent(out.send(childLine{Kind: lineRecords, WindowProgress: &result.WindowProgress{Window: w}, Records: wire})); err != nil {
					return err
				}
			}
			if err := sent(out.send(childLine{Kind: lineRow, WindowProgress: &e.WindowProgress, Row: e.Row, Cut: e.Cut != nil})); err != nil {
				return err
			}
			if e.Cut != nil {
				return nil
			}
			// The next window waits until the parent has taken this one.
			select {
			case got := <-next:
				if got != w {
					return fmt.Errorf("the parent answered window %d after window %d", got, w)
				}
			case <-ctx.Done():
			}
		}
		return nil
	})
	if werr != nil {
		return fmt.Errorf("load child: writing to the parent: %w", werr)
	}
	done := childLine{Kind: lineDone, WindowProgress: &result.WindowProgress{Windows: sw.Windows(), Seconds: sw.Seconds}}
	if runErr != nil {
		done.Error = runErr.Error()
	}
	if err := out.send(done); err != nil {
		return fmt.Errorf("load child: writing done: %w", err)
	}
	return nil
}

// pinAway pins every thread of this process, for good, to the processors
// it may use other than lab, and sets GOMAXPROCS to loadrun.GoMaxProcs of
// them (one Go processor more, which the dispatcher keeps). It
// returns the processors it is pinned to (nil when it is not) and a line
// saying what it did.
func pinAway(lab []int) ([]int, string) {
	if len(lab) == 0 {
		return nil, "generator not pinned: the lab's processors are not known"
	}
	p, err := affinity.PinAwayFrom(lab)
	if err != nil {
		return nil, "generator not pinned: " + err.Error()
	}
	if !p.Pinned() {
		return nil, p.String()
	}
	runtime.GOMAXPROCS(loadrun.GoMaxProcs(len(p.Generator)))
	return p.Generator, p.String()
}

// How a load child raises its scheduling priority as it starts (see
// raisePriority): every one of its threads at niceness LoadChildNice, and
// its sends at real-time round-robin priority LoadChildRTPriority: from
// the sending thread alone where loadrun.ThreadSender, from every thread
// otherwise.
const (
	LoadChildRTPriority = loadrun.SenderRTPriority
	LoadChildNice       = -10
)

// raisePriority raises the scheduling priority of every thread of this
// process, for good, when it runs on processors of its own (pinned away
// from the lab): on a 2-core machine the generator's processor is the one
// the server's websocket fan-out to a class uses too, and the generator
// should send on time whatever the server does. It sets niceness
// LoadChildNice. Where loadrun.ThreadSender, an open-loop window's sending
// thread takes real-time round-robin priority LoadChildRTPriority itself
// and the other threads stay at the normal policy (a generator all
// real-time is throttled on a saturated processor: see loadrun's
// threadSender), so it only checks that this is permitted; otherwise it
// sets every thread to that priority, so the generator runs first whenever
// it is ready. Unpinned, it would outrank the lab on the lab's processor,
// so it is not raised. It returns the niceness the threads run at, the
// real-time priority the sends go out at (0: none) and a line saying so,
// or why not.
func raisePriority(pinned bool) (nice, rt int, note string) {
	if nices, err := childproc.ThreadScheds(os.Getpid()); err == nil {
		nice = nices[os.Getpid()].Nice
	}
	if !pinned {
		return nice, 0, fmt.Sprintf("generator's priority not raised (niceness %d): it shares the lab's processors", nice)
	}
	nerr := childproc.SetNice(LoadChildNice)
	if nerr == nil {
		nice = LoadChildNice
	}
	if loadrun.ThreadSender {
		rerr := childproc.MayRoundRobin(LoadChildRTPriority)
		switch {
		case rerr == nil:
			return nice, LoadChildRTPriority, fmt.Sprintf("generator at niceness %d, sending from a thread at real-time round-robin priority %d", nice, LoadChildRTPriority)
		case nerr == nil:
			return nice, 0, fmt.Sprintf("generator at niceness %d, its sends not real-time: %v", nice, rerr)
		}
		return nice, 0, fmt.Sprintf("generator's priority not raised (niceness %d): %v; %v", nice, nerr, rerr)
	}
	rerr := childproc.SetRoundRobin(LoadChildRTPriority)
	switch {
	case rerr == nil:
		return nice, LoadChildRTPriority, fmt.Sprintf("generator at real-time round-robin priority %d, niceness %d", LoadChildRTPriority, nice)
	case nerr == nil:
		return nice, 0, fmt.Sprintf("generator at niceness %d, not real-time: %v", nice, rerr)
	}
	return nice, 0, fmt.Sprintf("generator's priority not raised (niceness %d): %v; %v", nice, nerr, rerr)
}

// ChildMain makes the running program able to serve as its own load
// child: if the environment variable envVar is "1" it runs RunLoadChild
// with the process's stdin, stdout and stderr (SIGTERM or SIGINT stop the
// sweep as a stop line does) and exits the process: status 0, or 1 when
// the protocol could not be kept. Otherwise it returns at once. Call it
// first thing in main or in TestMain, next to labsvc.ChildMain, and start
// children with labsvc.SelfCommand(envVar), which re-executes the program
// with envVar=1.
func ChildMain(envVar string) {
	if os.Getenv(envVar) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := RunLoadChild(ctx, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
