// Command lab is the terminal twin of the lab service the lessons measure:
// the same door, queue, workers and control API that the server starts as a
// sandboxed child. See package labsvc for the wire behaviour.
//
// Usage:
//
//	WORKERS=4 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 lab [--addr 127.0.0.1:8000] [--control 127.0.0.1:8001]
//	WORKERS=64 ACCEPT=workers BACKLOG=128 lab
//	WORKERS=64 POLICY=inflight,quota=12 lab
//
// Every knob is also a flag (--workers, --spin-ms, --wait-ms, --limit,
// --cpus, --stall-every, --stall-ms, --backlog, --accept, --policy,
// --lock-ms, --coherency-us); a flag wins over its environment variable.
// STALL_EVERY=N STALL_MS=M makes every Nth request take M ms; LOCK_MS and
// COHERENCY_US are contention (package labsvc: a lock every request holds
// for LOCK_MS, one at a time, and COHERENCY_US of processor more for each
// other request in service); ACCEPT=workers has each free worker accept the next
// caller itself, the rest waiting in the kernel's accept queue of BACKLOG;
// POLICY is the door's admission policy (package admit: queue, the default,
// bounded by LIMIT; inflight,quota=N; aimd; gradient; sojourn). It prints one line when
// it listens and stops cleanly on SIGINT or SIGTERM. Bad configuration exits
// with status 2 and one line naming the variable, its value and the allowed
// range.
//
// "lab lab-child …" is the hidden mode labsvc.StartChild uses: it serves on
// listeners inherited as file descriptors 3 and 4.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"capacitylab/labsvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(labsvc.ExitStatus(err))
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "lab-child" {
		return labsvc.RunChild(ctx, args[1:], getenv, stdout, stderr)
	}
	s, err := labsvc.ParseSettings("lab", args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage has been printed
	}
	if err != nil {
		return err
	}
	requests, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listening for requests: %w", err)
	}
	control, err := net.Listen("tcp", s.Control)
	if err != nil {
		requests.Close()
		return fmt.Errorf("listening for control: %w", err)
	}
	sb := labsvc.ApplySandbox(s.Config)
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	fmt.Fprintf(stdout, "lab: listening on http://%s (requests) and http://%s (control); %s; %s\n",
		requests.Addr(), control.Addr(), s.Config, sb)
	srv := labsvc.NewServer(s.Config, logger)
	// The control API answers to the name --control gives (as compose's
	// service:8001) besides IP addresses and localhost.
	if host, _, err := net.SplitHostPort(s.Control); err == nil {
		srv.AllowControlHost(host)
	}
	return srv.Serve(ctx, requests, control)
}
