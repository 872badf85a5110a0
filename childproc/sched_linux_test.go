package childproc_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"capacitylab/childproc"
)

// niceChildEnv makes this test binary a child that calls SetNice and
// SetRoundRobin: "set" as it runs (as root it may raise its priority),
// "drop" after giving up root for nobody's user id, so that raising it is
// not permitted.
const niceChildEnv = "CHILDPROC_TEST_NICE_CHILD"

// The niceness and real-time priority the child asks for.
const (
	childNice = -5
	childRT   = 1
)

func TestMain(m *testing.M) {
	if way := os.Getenv(niceChildEnv); way != "" {
		os.Exit(niceChild(way))
	}
	os.Exit(m.Run())
}

// niceChild calls SetNice(childNice) and SetRoundRobin(childRT), then
// starts four threads of its own (goroutines locked to their threads, so
// the runtime must start new ones), prints "threads BEFORE AFTER; NICE
// ERROR; RT ERROR" and waits for stdin to end.
func niceChild(way string) int {
	if way == "drop" && os.Geteuid() == 0 {
		if err := syscall.Setuid(65534); err != nil {
			fmt.Println("setuid:", err)
			return 1
		}
	}
	before := threads()
	nerr := childproc.SetNice(childNice)
	rerr := childproc.SetRoundRobin(childRT)
	started := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread()
			started <- struct{}{}
			select {}
		}()
	}
	for range 4 {
		<-started
	}
	fmt.Printf("threads %d %d; %v; %v\n", before, threads(), nerr, rerr)
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

func threads() int {
	ents, _ := os.ReadDir("/proc/self/task")
	return len(ents)
}

// startNiceChild starts a child that calls SetNice (see niceChild) and
// returns it with its report line; the child is killed at the test's end.
func startNiceChild(t *testing.T, way string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), niceChildEnv+"="+way)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

// SetNice and SetRoundRobin set every thread, and threads started after
// them take the same settings.
func TestSetNiceEveryThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED: not root (euid %d), so a negative niceness is not permitted here; TestSetNiceNotPermitted covers that", os.Geteuid())
	}
	cmd, line := startNiceChild(t, "set")
	var before, after int
	if _, err := fmt.Sscanf(line, "threads %d %d; <nil>; <nil>", &before, &after); err != nil {
		t.Fatalf("the child says %q: want SetNice and SetRoundRobin to succeed (%v)", line, err)
	}
	if after <= before {
		t.Fatalf("the child had %d threads before SetNice and %d after starting four locked goroutines: want more", before, after)
	}
	scheds, err := childproc.ThreadScheds(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(scheds) < after {
		t.Errorf("ThreadScheds read %d threads, the child has %d", len(scheds), after)
	}
	want := childproc.Sched{Nice: childNice, Policy: "round-robin", RTPriority: childRT}
	for tid, s := range scheds {
		if s != want {
			t.Errorf("thread %d is scheduled %+v, want %+v", tid, s, want)
		}
	}
	// This process was not touched.
	self, err := childproc.ThreadScheds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for tid, s := range self {
		if s.Nice == childNice || s.Policy != "normal" {
			t.Errorf("thread %d of the test process is scheduled %+v: only the child's should change", tid, s)
		}
	}
}

// Where raising the priority is not permitted, SetNice and SetRoundRobin
// say so and every thread stays as it was.
func TestSetNiceNotPermitted(t *testing.T) {
	cmd, line := startNiceChild(t, "drop")
	for _, want := range []string{
		fmt.Sprintf("niceness %d not permitted (it takes root or CAP_SYS_NICE)", childNice),
		fmt.Sprintf("real-time priority %d not permitted (it takes root or CAP_SYS_NICE)", childRT),
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the child says %q: want %q", line, want)
		}
	}
	scheds, err := childproc.ThreadScheds(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	for tid, s := range scheds {
		if s.Nice == childNice || s.Policy != "normal" {
			t.Errorf("thread %d is scheduled %+v although SetNice and SetRoundRobin failed", tid, s)
		}
	}
}
