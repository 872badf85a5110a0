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
// the lab children it starts are this binary again ("lab-child"), which
// inherit the variable.
const serveEnv = "CAPACITYLAB_TEST_SERVE"

// TestMain fails the package if a test leaves goroutines behind: run must
// stop everything it started when its context ends.
func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
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
