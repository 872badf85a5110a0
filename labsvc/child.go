package labsvc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"capacitylab/childproc"
)

// Supervisor limits.
const (
	// ChildReadyTimeout bounds the wait for a child's ready line.
	ChildReadyTimeout = 10 * time.Second
	// ChildStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	ChildStopTimeout = 2 * time.Second
)

// File descriptors of the listeners a child inherits (ExtraFiles 0 and 1).
const (
	childRequestsFD = 3
	childControlFD  = 4
)

// childReadyPrefix starts the line a child prints on stdout once it serves.
const childReadyPrefix = "lab: child ready"

// ChildCommand is a program started as a child: by StartChild as a lab
// child, which must call RunChild with the arguments that follow Args (the
// lab's flags), or by package measure as a load child. The server
// re-executes its own binary: {Path: os.Executable(), Args: ["lab-child"]}
// (or "load-child"); cmd/lab accepts the same hidden "lab-child"
// subcommand, cmd/load "load-child".
type ChildCommand struct {
	Path string   // program to execute
	Args []string // arguments before the child's own, e.g. ["lab-child"]
	Env  []string // extra environment entries, added to the parent's
}

// Child is a running lab child process. Its listeners were opened by the
// parent on 127.0.0.1 with kernel-chosen ports, so they are ready before the
// child runs and no port can be raced for.
type Child struct {
	cmd      *exec.Cmd
	cfg      Config
	target   string
	control  string
	stderr   *childproc.Tail
	stopping atomic.Bool
	done     chan struct{}
	err      error // set before done is closed
	stopOnce sync.Once
}

// StartChild starts a lab child with cfg and returns once the child has said
// it serves. The child runs with GOMAXPROCS=GoMaxProcs(cfg), CPU affinity
// where the OS allows, MemoryLimit, in its own process group, and with Pdeathsig
// SIGKILL so it dies with the parent. (Pdeathsig fires when the parent
// *thread* that started it exits; the Go runtime does not end threads except
// for goroutines that exit while locked to one, which this package never
// does.) It is killed when ctx ends and is always waited for; Done is closed
// once it has exited.
func StartChild(ctx context.Context, cc ChildCommand, cfg Config) (*Child, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cc.Path == "" {
		return nil, errors.New("labsvc: ChildCommand.Path is empty")
	}
	reqLn, reqFile, err := loopbackListener()
	if err != nil {
		return nil, err
	}
	defer reqLn.Close()
	defer reqFile.Close()
	ctlLn, ctlFile, err := loopbackListener()
	if err != nil {
		return nil, err
	}
	defer ctlLn.Close()
	defer ctlFile.Close()

	args := append(append([]string(nil), cc.Args...), cfg.Args()...)
	cmd := exec.Command(cc.Path, args...)
	cmd.Env = append(append(os.Environ(), cc.Env...), fmt.Sprintf("GOMAXPROCS=%d", GoMaxProcs(cfg)))
	cmd.ExtraFiles = []*os.File{reqFile, ctlFile}
	cmd.SysProcAttr = childproc.Attr()
	cmd.WaitDelay = time.Second // do not wait forever for output pipes after the exit
	c := &Child{
		cmd:     cmd,
		cfg:     cfg,
		target:  "http://" + reqLn.Addr().String(),
		control: "http://" + ctlLn.Addr().String(),
		stderr:  &childproc.Tail{},
		done:    make(chan struct{}),
	}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("labsvc: child stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("labsvc: starting lab child: %w", err)
	}

	ready := make(chan error, 1)
	go func() {
		// The first stdout line says the child serves; the rest is kept
		// with stderr as last words.
		br := bufio.NewReader(stdout)
		line, err := br.ReadString('\n')
		if err != nil {
			ready <- fmt.Errorf("child closed stdout before it was ready")
		} else if !strings.HasPrefix(line, childReadyPrefix) {
			ready <- fmt.Errorf("child's first line was %q, want %q…", strings.TrimSpace(line), childReadyPrefix)
		} else {
			ready <- nil
		}
		_, _ = io.Copy(c.stderr, br)
	}()
	go func() {
		werr := cmd.Wait()
		if !c.stopping.Load() {
			c.err = &childproc.ExitError{Name: "lab child", Pid: cmd.Process.Pid, Err: werr, LastWords: c.stderr.LastLines(childproc.LastLines)}
		}
		close(c.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			c.stopping.Store(true)
			_ = cmd.Process.Kill()
		case <-c.done:
		}
	}()

	timer := time.NewTimer(ChildReadyTimeout)
	defer timer.Stop()
	var rerr error
	select {
	case rerr = <-ready:
	case <-timer.C:
		rerr = fmt.Errorf("child not ready after %v", ChildReadyTimeout)
	case <-ctx.Done():
		rerr = ctx.Err()
	}
	if rerr != nil {
		c.stopping.Store(true)
		_ = cmd.Process.Kill()
		<-c.done
		return nil, fmt.Errorf("labsvc: lab child (pid %d) did not start: %v; last words: %s", cmd.Process.Pid, rerr, c.stderr.LastLines(childproc.LastLines))
	}
	return c, nil
}

// loopbackListener opens a TCP listener on 127.0.0.1 with a kernel-chosen
// port, and a file (a duplicate descriptor) to pass to a child.
func loopbackListener() (*net.TCPListener, *os.File, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, fmt.Errorf("labsvc: listening for a child: %w", err)
	}
	f, err := ln.File()
	if err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("labsvc: listener file for a child: %w", err)
	}
	return ln, f, nil
}

// Target returns the base URL requests go to, e.g. "http://127.0.0.1:41234".
func (c *Child) Target() string { return c.target }

// Control returns the base URL of the child's control API.
func (c *Child) Control() string { return c.control }

// Pid returns the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Config returns the knobs the child was started with.
func (c *Child) Config() Config { return c.cfg }

// Done is closed once the child has exited and been waited for.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err returns nil while the child runs and after an exit that was asked for
// (Stop, or the context ending); after an unexpected exit it returns a
// *childproc.ExitError carrying the exit status and the child's last stderr
// lines.
func (c *Child) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Stop asks the child to finish (SIGTERM), kills it if it has not exited
// after ChildStopTimeout, and waits for it. It returns the child's Err: nil
// unless the child had already died unexpectedly.
func (c *Child) Stop() error {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(ChildStopTimeout)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			_ = c.cmd.Process.Kill()
		}
	})
	<-c.done
	return c.err
}

// RunChild is the body of a lab child process: it reads the knobs from args
// (flags as ParseSettings reads them; the environment is the fallback),
// applies the sandbox, takes its two listeners from file descriptors 3
// (requests) and 4 (control), prints one ready line on stdout and serves
// until ctx ends. The caller is the child's main (cmd/lab's and cmd/server's
// hidden "lab-child" subcommand), which should end ctx on SIGTERM and exit
// with status 2 when the error is a FieldErrors or ErrUsage.
func RunChild(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := ParseConfig(args, getenv)
	if err != nil {
		return err
	}
	sb := ApplySandbox(cfg)
	requests, err := inheritedListener(childRequestsFD, "lab-requests")
	if err != nil {
		return err
	}
	control, err := inheritedListener(childControlFD, "lab-control")
	if err != nil {
		requests.Close()
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	fmt.Fprintf(stdout, "%s on %s (requests), %s (control); %s; %s\n", childReadyPrefix, requests.Addr(), control.Addr(), cfg, sb)
	return NewServer(cfg, logger).Serve(ctx, requests, control)
}

func inheritedListener(fd uintptr, name string) (net.Listener, error) {
	f := os.NewFile(fd, name)
	if f == nil {
		return nil, fmt.Errorf("labsvc: no inherited file descriptor %d (%s): run me through StartChild", fd, name)
	}
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("labsvc: inherited descriptor %d (%s) is not a listener: %w", fd, name, err)
	}
	return ln, nil
}
