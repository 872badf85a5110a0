package labsvc

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// ChildMain makes the running program able to serve as its own lab child:
// if the environment variable envVar is "1" it runs RunChild with the
// program's arguments, stdout and stderr until SIGTERM or SIGINT, and exits
// the process (status 0, 2 for a configuration or usage error, 1
// otherwise); otherwise it returns at once. Call it first thing in main, or
// in TestMain so a package's tests can start real lab children without
// building a binary:
//
//	func TestMain(m *testing.M) {
//		labsvc.ChildMain("MYPKG_LAB_CHILD")
//		os.Exit(m.Run())
//	}
//
// and start them with SelfCommand("MYPKG_LAB_CHILD").
func ChildMain(envVar string) {
	if os.Getenv(envVar) != "1" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := RunChild(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "lab child:", err)
	os.Exit(ExitStatus(err))
}

// SelfCommand returns the ChildCommand that re-executes the running program
// with envVar=1, for a program that calls ChildMain(envVar) (or, for a
// load child, measure.ChildMain(envVar)).
func SelfCommand(envVar string) (ChildCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return ChildCommand{}, fmt.Errorf("labsvc: finding my own executable: %w", err)
	}
	return ChildCommand{Path: exe, Env: []string{envVar + "=1"}}, nil
}
