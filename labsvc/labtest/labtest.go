// Package labtest starts labs for tests, as package storetest starts
// databases: a lab served in the test's own process on loopback
// (Serve), or a lab child process (Child) where the lab's processor knobs
// must be real. Each runs until the test ends.
package labtest

import (
	"context"
	"net"
	"testing"
	"time"

	"capacitylab/labsvc"
)

// Lab is a lab served in process: where its door and control API listen.
type Lab struct {
	Server  *labsvc.Server
	Addr    string // the door, host:port
	Target  string // the door, http://host:port
	Control string // the control API, http://host:port
}

// Serve serves cfg in this process on loopback listeners until the test
// ends, then checks that the lab's Serve returned nil within 5 s of being
// told to stop.
func Serve(t testing.TB, cfg labsvc.Config) Lab {
	t.Helper()
	req, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = req.Close()
		t.Fatal(err)
	}
	srv := labsvc.NewServer(cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, req, ctl) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("lab Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("lab Serve did not return within 5s of cancel")
		}
	})
	addr := req.Addr().String()
	return Lab{Server: srv, Addr: addr, Target: "http://" + addr, Control: "http://" + ctl.Addr().String()}
}

// Child starts cfg as a lab child process: this test binary run again
// with env=child, whose TestMain calls labsvc.ChildMain(env) first. The
// child is stopped (and waited for) when the test ends.
func Child(t testing.TB, env string, cfg labsvc.Config) *labsvc.Child {
	t.Helper()
	cc, err := labsvc.SelfCommand(env)
	if err != nil {
		t.Fatal(err)
	}
	c, err := labsvc.StartChild(t.Context(), cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Stop kills a child that has not exited ChildStopTimeout after
	// SIGTERM, and waits for it.
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
