// Package affinity keeps a load generator on processors of its own, away
// from the lab it measures and from the server that runs it, and says where
// each side runs.
//
// Three kinds of process share a machine during a sweep, each placed by
// which processors it may use (sched_setaffinity), never by priority:
//
//   - A server that runs sweeps keeps processors free of its own work for
//     its generators, once at its start (KeepFree: the last processor, or
//     one per run slot), so its pages and the fan-out of a run's rows to a
//     watching class never run where a generator times its sends.
//   - A lab child pins itself to the first CPUS processors it may use
//     (labsvc's sandbox, with PinTo); started by such a server it inherits
//     the server's narrower mask, so it takes them from the processors the
//     server kept for itself.
//   - A run's load child (package measure) pins itself to the processors
//     its parent names, the free ones minus its lab's (PinTo, which may
//     widen its mask beyond the one it inherited). cmd/load, a generator in
//     a terminal, calls PinAwayFrom with the lab's processors (what the
//     lab's control API reports): every processor it may use but the lab's.
//
// Affinity is per thread on Linux, so PinTo, PinAwayFrom and Restore walk
// /proc/self/task until a pass finds no new thread; threads the Go runtime
// starts later inherit the mask of the thread that creates them (the tests
// check this by locking goroutines to new threads and reading every
// thread's Cpus_allowed_list). PinAwayFrom returns a Pinning whose Restore
// puts each thread's previous mask back, for a process that goes on after
// its lab stops (the tests, which start one lab child after another). When
// nothing is left to pin to (a 1-core host) nothing changes and
// Pinning.String says so for the log. ThreadCPUs(pid) reads a process's
// per-thread Cpus_allowed_list, so anyone can check where each side runs.
//
// On other systems nothing is pinned: Allowed, PinTo, PinAwayFrom,
// ProcessCPUs and ThreadCPUs return an error saying so.
package affinity
