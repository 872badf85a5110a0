package affinity_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"capacitylab/affinity"
	"capacitylab/labsvc"
)

// The tests keep this process away from a real lab child: this test binary
// re-executed with childEnv=1 (labsvc.ChildMain).
const childEnv = "AFFINITY_TEST_CHILD"

func TestMain(m *testing.M) {
	labsvc.ChildMain(childEnv)
	goleak.VerifyTestMain(m)
}

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		bad  bool
	}{
		// One processor.
		{in: "0", want: []int{0}},
		// A range.
		{in: "0-3", want: []int{0, 1, 2, 3}},
		// Numbers and ranges mixed, as a cpuset cgroup writes them.
		{in: "0,2-3,8", want: []int{0, 2, 3, 8}},
		// A range backwards is not a CPU list.
		{in: "3-1", bad: true},
		// Nor is a word.
		{in: "all", bad: true},
		// Nor an empty list.
		{in: "", bad: true},
	}
	for _, c := range cases {
		got, err := affinity.ParseCPUList(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseCPUList(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// union is every processor any thread of a process may use.
func union(t *testing.T, pid int) (map[int][]int, []int) {
	t.Helper()
	threads, err := affinity.ThreadCPUs(pid)
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for _, cpus := range threads {
		for _, c := range cpus {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	slices.Sort(all)
	return threads, all
}

// A lab child with CPUS=1 and this process pinned away share no processor,
// threads the Go runtime starts afterwards stay away too, and Restore puts
// every thread's affinity back.
func TestPinAwayKeepsGeneratorOffTheLab(t *testing.T) {
	cfg := labsvc.DefaultConfig()
	cfg.CPUs = 1
	before, beforeAll := union(t, os.Getpid())
	if len(beforeAll) < 2 {
		t.Skipf("this process may use only processor(s) %v: there is no other processor to keep the generator on", beforeAll)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cc, err := labsvc.SelfCommand(childEnv)
	if err != nil {
		t.Fatal(err)
	}
	child, err := labsvc.StartChild(ctx, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Stop()

	lab, err := labsvc.LabCPUs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := affinity.PinAwayFrom(lab)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Pinned() {
		t.Fatalf("PinAway did nothing with %d processors allowed: %s", len(beforeAll), p)
	}
	t.Log(p)
	if len(p.Lab) != 1 || slices.Contains(p.Generator, p.Lab[0]) {
		t.Fatalf("lab %v, generator %v: want one lab processor outside the generator's", p.Lab, p.Generator)
	}

	// Force the runtime to start new threads: each goroutine locked to its
	// thread and blocked keeps that thread, so the others need new ones.
	// Idle threads left by an earlier test (or -count) are taken first, so
	// lock goroutines until threads that did not exist before appear. The
	// goroutines end locked, which ends their threads too.
	release := make(chan struct{})
	var locked sync.WaitGroup
	defer func() {
		close(release)
		locked.Wait()
	}()
	const extra = 6
	var self map[int][]int
	var selfAll []int
	fresh, goroutines := 0, 0
	for fresh < extra && goroutines < 64 {
		started := make(chan struct{})
		locked.Add(1)
		go func() {
			defer locked.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			close(started)
			<-release
		}()
		<-started
		goroutines++
		self, selfAll = union(t, os.Getpid())
		fresh = 0
		for tid := range self {
			if _, ok := before[tid]; !ok {
				fresh++
			}
		}
	}
	if fresh < extra {
		t.Errorf("%d threads before, %d new after locking %d goroutines to threads: the test did not make new threads", len(before), fresh, goroutines)
	}
	t.Logf("threads: %d before, %d new after locking %d goroutines to threads", len(before), fresh, goroutines)
	for tid, cpus := range self {
		if !slices.Equal(cpus, p.Generator) {
			t.Errorf("thread %d of this process may use %v, want the generator's %v", tid, cpus, p.Generator)
		}
	}
	// The child pins itself at start; wait until its threads say so.
	var labAll []int
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, labAll = union(t, child.Pid())
		if slices.Equal(labAll, p.Lab) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(labAll, p.Lab) {
		t.Errorf("the lab child's threads may use %v, want %v", labAll, p.Lab)
	}
	for _, c := range selfAll {
		if slices.Contains(labAll, c) {
			t.Errorf("processor %d is used by both the lab (%v) and this process (%v)", c, labAll, selfAll)
		}
	}

	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	after, _ := union(t, os.Getpid())
	for tid, cpus := range after {
		if !slices.Equal(cpus, beforeAll) {
			t.Errorf("after Restore thread %d may use %v, want %v as before", tid, cpus, beforeAll)
		}
	}
}

// On a process limited to the lab's processors PinAwayFrom changes nothing
// and says why.
func TestPinAwayNothingLeft(t *testing.T) {
	_, all := union(t, os.Getpid())
	p, err := affinity.PinAwayFrom(all) // the lab has every processor
	if err != nil {
		t.Fatal(err)
	}
	if p.Pinned() || p.Generator != nil {
		t.Fatalf("PinAwayFrom pinned to %v with the lab taking all of %v", p.Generator, all)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if _, now := union(t, os.Getpid()); !slices.Equal(now, all) {
		t.Errorf("affinity changed from %v to %v", all, now)
	}
	t.Log(p)
}

// Restore puts back every thread's affinity even when the Go runtime
// starts threads while PinAway goes round the process's threads: a thread
// born then from an already pinned thread carries the pinned mask, which
// is not its own to put back. In each round goroutines locked to their
// threads make the runtime start up to 16 new threads while PinAway and
// Restore run (they end with the round, and so do their threads: a
// goroutine that exits locked takes its thread with it).
func TestPinAwayRestoreWhileThreadsStart(t *testing.T) {
	_, beforeAll := union(t, os.Getpid())
	if len(beforeAll) < 2 {
		t.Skipf("this process may use only processor(s) %v: there is no other processor to keep the generator on", beforeAll)
	}
	lab := beforeAll[:1]
	for round := range 20 {
		stop, release := make(chan struct{}), make(chan struct{})
		spawned := make(chan struct{})
		var locked sync.WaitGroup
		go func() {
			defer close(spawned)
			for range 16 {
				select {
				case <-stop:
					return
				default:
				}
				started := make(chan struct{})
				locked.Add(1)
				go func() {
					defer locked.Done()
					runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
					close(started)
					<-release
				}()
				<-started
			}
		}()
		p, err := affinity.PinAwayFrom(lab)
		var rerr error
		if err == nil {
			rerr = p.Restore()
		}
		close(stop)
		<-spawned
		after, _ := union(t, os.Getpid())
		close(release)
		locked.Wait()
		if err != nil || rerr != nil {
			t.Fatalf("round %d: PinAwayFrom: %v; Restore: %v", round, err, rerr)
		}
		for tid, cpus := range after {
			if !slices.Equal(cpus, beforeAll) {
				t.Fatalf("round %d: after Restore thread %d may use %v, want %v as before (%d threads)", round, tid, cpus, beforeAll, len(after))
			}
		}
	}
}

// KeepFree keeps the last n processors free of every thread of the process
// and says which; asked for as many as the process may use, it keeps none
// and changes nothing; Restore gives every thread its processors back.
func TestKeepFree(t *testing.T) {
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Skipf("no processor affinity here: %v", err)
	}
	if len(allowed) < 2 {
		t.Skipf("this process may use %d processor(s) %v: none can be kept free", len(allowed), allowed)
	}
	if free, p, err := affinity.KeepFree(len(allowed)); err != nil || free != nil || p != nil {
		t.Fatalf("KeepFree(%d) of %v: %v, %v, %v; want nothing kept", len(allowed), allowed, free, p, err)
	}
	free, p, err := affinity.KeepFree(1)
	if err != nil {
		t.Fatal(err)
	}
	if want := allowed[len(allowed)-1:]; !slices.Equal(free, want) {
		t.Fatalf("KeepFree(1) of %v kept %v free, want %v", allowed, free, want)
	}
	threads, err := affinity.ThreadCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for tid, cpus := range threads {
		if !slices.Equal(cpus, allowed[:len(allowed)-1]) {
			t.Errorf("thread %d may use %v, want %v", tid, cpus, allowed[:len(allowed)-1])
		}
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if after, _ := affinity.ProcessCPUs(os.Getpid()); !slices.Equal(after, allowed) {
		t.Errorf("after Restore the process may use %v, want %v", after, allowed)
	}
}
