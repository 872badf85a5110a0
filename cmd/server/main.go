// Command server serves the Capacity Lab course: lesson pages, predictions
// and checks, and each learner's progress.
//
// Usage:
//
//	server [flags]                 serve the course
//	server lessons check [--pending] [DIR]
//	                               validate lesson files and their marks (default: the embedded
//	                               course); --pending allows tables still to be recorded
//	server lessons marks [--content DIR] [--all] [--fix]
//	                               list the marked numbers and claims the tables no longer
//	                               support; --fix rewrites the stale numbers (see run.go)
//	server lessons record [--content DIR] [--lesson SLUG] [--lab ID] [--seconds-scale F] [--max-load F] [--busy]
//	                               run lab presets and write their result tables (see record.go)
//
// Flags, each with an environment fallback (the flag wins):
//
//	--addr ADDR                    ADDR                    listen address (default :8080)
//	--content DIR                  CONTENT                 serve lessons from DIR, re-read when they change
//	                                                       (tables still to be recorded are allowed there)
//	--data DIR                     DATA                    directory for the SQLite file (default ./data)
//	--frame-ancestors LIST         FRAME_ANCESTORS         CSP frame-ancestors of pages (default 'self')
//	--widget-frame-ancestors LIST  WIDGET_FRAME_ANCESTORS  the same for /widgets/{kind} (default *)
//	--queue N                      QUEUE                   sweeps the queue holds (default 8)
//	--lab-command PATH             LAB_COMMAND             program run as each sweep's lab (default: this binary)
//	--instructor-key KEY           INSTRUCTOR_KEY          key needed to start a class session
//	--session-idle DURATION        SESSION_IDLE            class sessions end after this idle time (default 3h)
//
// The server prints the URL it serves on, logs requests with log/slog to
// standard error, answers /healthz and /metrics, and shuts down gracefully
// on SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		stop()
		os.Exit(exitCode(err))
	}
}
