// Package affinity keeps a load generator off the processors of the lab it
// measures, and says where each side runs.
//
// A lab child pins itself to its first CPUS processors (labsvc's sandbox,
// with PinTo), but that alone does not stop the generator's process from
// running on them too, which would charge the generator's work to the lab. Whoever
// runs the generator owns its pinning, and only the generator is pinned:
// a run's load child (package measure) and cmd/load call PinAwayFrom with
// the lab's processors (ProcessCPUs of the lab child's pid, which is right
// however it was started, or what the lab's control API reports), once,
// and never put it back: the process is the generator for as long as it
// lives. The server that starts the children is never pinned. PinAwayFrom
// pins every thread of the calling process to the processors it may use
// minus the lab's and returns a Pinning whose Restore puts each thread's
// previous mask back, for a process that goes on after its lab stops (the
// tests, which start one lab child after another).
//
// Affinity is per thread on Linux (sched_setaffinity), so PinAwayFrom and
// Restore walk /proc/self/task until a pass finds no new thread; threads
// the Go runtime starts later inherit the mask of the thread that creates
// them (the tests check this by locking goroutines to new threads and
// reading every thread's Cpus_allowed_list). Pin after starting the lab
// child and restore before starting the next: a child started while its
// parent is pinned away inherits the generator's processors. When the lab
// has every processor (a 1-core host) nothing changes and Pinning.String
// says so for the log. ThreadCPUs(pid) reads a process's per-thread
// Cpus_allowed_list, so anyone can check where each side runs.
//
// On other systems nothing is pinned: PinAwayFrom, ProcessCPUs and
// ThreadCPUs return an error saying so.
package affinity
