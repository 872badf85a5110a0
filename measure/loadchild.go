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
	"capacitylab/loadrun"
	"capacitylab/result"
)

// errStopped is why a load child stops when its parent says stop (or
// closes its stdin).
var errStopped = errors.New("the parent stopped the measurement")

// RunLoadChild is the body of a load child process: it reads the start
// line on stdin, pins every thread of its own process to the processors
// the lab does not use (for good: it never puts them back) with GOMAXPROCS
// fitted to them (pinAway), says hello on stdout, runs the preset's sweep at the
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
	hello.CPUs, hello.Pinning = pinGenerator(start.GeneratorCPUs, start.LabCPUs)
	hello.GoMaxProcs = runtime.GOMAXPROCS(0)
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

// pinGenerator pins every thread of this process, for good, to gen (the
// processors the parent chose: see Config.Generator), and sets GOMAXPROCS
// to the runtime's default for them. It returns the processors it is
// pinned to (nil when it is not) and a line saying what it did, naming the
// lab's processors it keeps off.
//
// The runtime sets GOMAXPROCS from the processors the process may use
// when it starts, before this pinning, and afterwards looks again at most
// once a second (from its monitor thread, which sleeps longer while the
// process is idle), changing it by stopping the world, possibly in the
// middle of the first window; and not at all when GOMAXPROCS is set in
// the environment, which a child inherits from the server.
// runtime.SetDefaultGOMAXPROCS applies the pinned processors (and any
// cgroup CPU limit) at once, whatever the environment said: one Go
// processor for each processor the generator may use, the sending
// goroutine's and its readers' alike, as in any Go program.
func pinGenerator(gen, lab []int) ([]int, string) {
	switch {
	case len(lab) == 0:
		return nil, "generator not pinned: the lab's processors are not known"
	case len(gen) == 0:
		return nil, fmt.Sprintf("generator not pinned: the lab's processor(s) %v are all it may use, so the lab shares them with the generator", lab)
	}
	if err := affinity.PinTo(gen); err != nil {
		return nil, "generator not pinned: " + err.Error()
	}
	runtime.SetDefaultGOMAXPROCS()
	return gen, fmt.Sprintf("generator pinned to processor(s) %v, away from the lab's %v", gen, lab)
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
