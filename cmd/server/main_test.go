package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// serveEnv set to 1 makes this test binary the server itself (run with
// its arguments), so a test can start a real server process and kill it;
// the lab and load children it starts are this binary again ("lab-child",
// "load-child"), which inherit the variable.
const serveEnv = "CAPACITYLAB_TEST_SERVE"

// TestMain fails the package if a test leaves goroutines behind: run must
// stop everything it started when its context ends.
//
// A server a test runs in this process (start) starts each run's children
// as the real server does: this binary (os.Executable) with "load-child",
// and with "lab-child" unless --lab-command names another program, so
// those arguments make it run too, not the tests.
func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" || (len(os.Args) > 1 && (os.Args[1] == "load-child" || os.Args[1] == "lab-child")) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(exitCode(err))
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
