// Command proxy stands in front of any HTTP service and applies an
// admission policy (package admit) to the requests it sends there, as the
// lab's door applies one to its own: the same policies, the same refusal
// (503 with Retry-After: 1), the same metrics.
//
// Usage:
//
//	UPSTREAM=http://127.0.0.1:8000 POLICY=inflight,quota=5 proxy
//	proxy --upstream http://127.0.0.1:8000 --policy aimd,backoff=0.75 [--addr 127.0.0.1:7000] [--control 127.0.0.1:7001]
//	proxy --policy sojourn --workers 7 --timeout 2.5s
//
// Every setting is a flag with an environment fallback (the flag wins):
//
//	flag              env             default               meaning
//	--addr            ADDR            127.0.0.1:7000        where callers' requests are taken
//	--control         CONTROL_ADDR    127.0.0.1:7001        GET /healthz, /config, /metrics
//	--upstream        UPSTREAM        http://127.0.0.1:8000 the service behind (the lab's default address)
//	--policy          POLICY          queue                 the admission policy, as package admit spells it
//	--limit           LIMIT           0                     the queue policy's bound on callers waiting for a worker
//	--workers         WORKERS         0                     requests sent upstream at once; 0 = every one admitted
//	--timeout         TIMEOUT         0                     how long to wait for the upstream's response headers; 0 = as long as the caller
//	--trusted-proxies TRUSTED_PROXIES none                  reverse proxies in front of this one, whose forwarding headers are kept
//
// A request is admitted or refused by the policy when it arrives. With
// WORKERS=0 (the default) every admitted request goes upstream at once,
// so "inside" (what inflight, aimd and gradient limit) is the requests in
// flight to the upstream, as in the capacity demo's proxy; with WORKERS=N
// at most N go at once and the rest wait in a FIFO queue, bounded by
// LIMIT (the queue policy) or by their time in it (sojourn), as at the
// lab's door.
//
// A request is inside, and holds its worker, from admission until its
// answer ends, except a long-lived answer: a protocol upgrade (101, a
// websocket) or an event stream (Content-Type text/event-stream). Its
// life is the caller's choice, not the upstream's work, so it leaves the
// count and gives its worker back as its headers arrive, and it is no
// latency sample (admit.LongLived; proxy_upstream_total counts it as
// stream). A quota therefore counts requests being answered and the
// opening of websockets and streams, not the connections they hold open;
// bound those at the upstream. The policy learns from each answer: a 503, 429 or other 5xx
// from the upstream, or no connection to it (answered 502), is an
// overload signal; so is no answer within TIMEOUT (answered 504) and a
// caller that goes away before its answer (the caller gave up: a timeout
// from its side); any other answer is served, its latency from arrival to
// the end of the answer a sample, except a long-lived one (above). The upstream's answers, 503s included,
// are passed on as they are.
//
// TIMEOUT bounds the wait for the answer's headers, from when the request
// goes upstream, and not the body that follows: once the headers are in,
// the body streams as long as the upstream sends it and the caller reads
// it (a chunked answer, an event stream, a websocket), and only the
// caller going away ends it early. An answer is never cut by TIMEOUT
// after its status has been passed on, so a 200 the caller sees is always
// whole unless the upstream or the caller broke it off.
//
// The forwarding headers: the upstream is sent X-Forwarded-For,
// X-Forwarded-Host and X-Forwarded-Proto, and its own Host (UPSTREAM's,
// so a virtual host or a TLS name behind it matches; the caller's Host is
// in X-Forwarded-Host). What they say depends on who sent the request. A
// caller in TRUSTED_PROXIES (a TLS terminator or a load balancer in front
// of this proxy) has its chain kept, as a reverse proxy's users expect:
// its address is appended to the X-Forwarded-For it sent, its
// X-Forwarded-Host and -Proto are passed on (so https said by the edge
// stays https), and a Forwarded header it sent gets an element for this
// hop. Anyone else could write those headers as they like, so theirs are
// replaced by what this proxy saw: the caller's address, the Host it
// sent, http; a Forwarded header is dropped. By default nobody is
// trusted.
//
// Bad settings exit with status 2 and one line naming each variable, its
// value and what is allowed; nothing is served. The proxy prints one line
// when it listens and stops cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"capacitylab/labsvc"

	// The public roots (Mozilla's, as Go ships them), used when the system
	// has none: the image is FROM scratch, and UPSTREAM may be https://.
	_ "golang.org/x/crypto/x509roots/fallback"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(labsvc.ExitStatus(err))
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	s, err := parseSettings(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage has been printed
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	p, err := newProxy(s, logger)
	if err != nil {
		return err
	}
	requests, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listening for requests: %w", err)
	}
	control, err := net.Listen("tcp", s.control)
	if err != nil {
		requests.Close()
		return fmt.Errorf("listening for control: %w", err)
	}
	fmt.Fprintf(stdout, "proxy: listening on http://%s (requests) and http://%s (control); upstream %s; %s\n",
		requests.Addr(), control.Addr(), s.upstream, s)
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	servers := []*http.Server{
		{Handler: p, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, ErrorLog: errLog},
		{Handler: p.controlHandler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: errLog},
	}
	errc := make(chan error, 2)
	for i, ln := range []net.Listener{requests, control} {
		go func() {
			if err := servers[i].Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
				return
			}
			errc <- nil
		}()
	}
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
		err = fmt.Errorf("serving: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range servers {
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}
	p.close()
	return err
}
