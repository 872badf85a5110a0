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
//	server lti add --issuer URL --client-id ID --deployment ID --auth-url URL --token-url URL --jwks-url URL
//	               [--name NAME] [--frame-origin ORIGIN] [--token-audience AUD] [--data DIR | --database-url URL]
//	                               register an LTI 1.3 learning platform (see lti.go and docs/LTI.md)
//	server lti list [--data DIR]   the registered platforms and the tool's keys
//	server lti remove --issuer URL --client-id ID [--data DIR]
//	server lti rotate-key [--now] [--data DIR]
//	                               add a new signing key: published at once, signing after 10 minutes
//	                               (at once with --now); the one before stays published
//
// Flags, each with an environment fallback (the flag wins):
//
//	--addr ADDR                    ADDR                    listen address (default 127.0.0.1:8080, this machine only;
//	                                                       :8080 listens on every interface)
//	--content DIR                  CONTENT                 serve lessons from DIR, re-read when they change
//	                                                       (tables still to be recorded are allowed there)
//	--data DIR                     DATA                    directory for the SQLite file (default ./data)
//	--database-url URL             DATABASE_URL            Postgres instead of the SQLite file (postgres://user:pw@host/db)
//	--frame-ancestors LIST         FRAME_ANCESTORS         CSP frame-ancestors of pages (default 'self')
//	--widget-frame-ancestors LIST  WIDGET_FRAME_ANCESTORS  the same for /widgets/{kind} (default *)
//	--queue N                      QUEUE                   sweeps the queue holds (default 8)
//	--queue-per-address N          QUEUE_PER_ADDRESS       sweeps one client address may have waiting or running (default 3)
//	--max-run-seconds N            MAX_RUN_SECONDS         windows × seconds one sweep may ask for (default 120)
//	--max-run-cpu N                MAX_RUN_CPU             processor seconds one sweep may ask of the lab (default 60)
//	--joins-per-minute N           JOINS_PER_MINUTE        class joins (and LTI launches) one client address may make a minute (default 600)
//	--sessions-per-hour N          SESSIONS_PER_HOUR       class sessions one address may start an hour without a key (default 20)
//	--lab-command PATH             LAB_COMMAND             program run as each sweep's lab (default: this binary)
//	--instructor-key KEY           INSTRUCTOR_KEY          key needed to start a class session
//	--session-idle DURATION        SESSION_IDLE            class sessions end after this idle time (default 3h)
//	--public-url ORIGIN            PUBLIC_URL              the site's origin as platforms reach it, for the LTI URLs
//	--lti-platforms FILE           LTI_PLATFORMS           JSON file of LTI platforms, beside the stored ones
//	--trusted-proxies LIST         TRUSTED_PROXIES         reverse proxies whose forwarding headers are believed
//	--request-log MODE             REQUEST_LOG             which requests get a log line: sampled (default), all or errors
//
// The server prints the URL it serves on, logs with log/slog to standard
// error (server errors, slow requests and a sample of the rest, by
// --request-log), answers /healthz and /metrics, and shuts down gracefully
// on SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	// The public roots (Mozilla's, as Go ships them), used when the system
	// has none: the image is FROM scratch, without /etc/ssl, and an LTI
	// platform's keys, tokens and scores are fetched over HTTPS. Roots the
	// system has (or SSL_CERT_FILE, SSL_CERT_DIR) come first.
	_ "golang.org/x/crypto/x509roots/fallback"
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
