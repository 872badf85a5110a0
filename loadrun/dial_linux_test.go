package loadrun_test

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// A target whose accept queue is full drops new connection attempts: the
// caller gives up while connecting, and the record says so.
func TestOpenDialTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // never accepted: the queue fills at once
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	full := false
	for range 8 { // fill the accept queue until a connection attempt hangs
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			full = true
			break
		}
		defer c.Close()
	}
	if !full {
		t.Skip("this kernel kept accepting connections into a queue of 0; cannot make a connect hang")
	}
	target, err := loadrun.NewTarget("http://"+addr+"/", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sched := uniform(t, 20, 0.2)
	res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
	checkBooks(t, res, len(sched))
	for _, r := range res.Records {
		if r.Outcome != result.Gaveup || r.Reason != result.ReasonDialTimeout {
			t.Fatalf("record %d: %v/%q, want gaveup/dial_timeout", r.Seq, r.Outcome, r.Reason)
		}
		if wait := r.End - r.Sent; wait < 300*time.Millisecond || wait > 600*time.Millisecond {
			t.Fatalf("record %d gave up after %v, want about the 300ms timeout", r.Seq, wait)
		}
	}
}

// A target named by host name is dialled through net.Dialer (an IP
// address is connected directly): both paths give the same records.
func TestOpenHostName(t *testing.T) {
	u := startFake(t, instant).URL
	_, port, err := net.SplitHostPort(u[len("http://") : len(u)-1])
	if err != nil {
		t.Fatal(err)
	}
	if addrs, err := net.LookupHost("localhost"); err != nil || len(addrs) == 0 {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	target, err := loadrun.NewTarget("http://localhost:"+port+"/", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sched := uniform(t, 100, 0.2)
	res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
	checkBooks(t, res, len(sched))
	for _, r := range res.Records {
		if r.Outcome != result.OK || r.Status != 200 || r.QueueWaitMS != 0.5 || r.ServiceMS != 1.25 {
			t.Fatalf("record %d: %v/%q status %d headers %v/%v, want ok 200 0.5/1.25", r.Seq, r.Outcome, r.Reason, r.Status, r.QueueWaitMS, r.ServiceMS)
		}
	}
}
