package runner

import (
	"errors"
	"os"
	"runtime"

	"capacitylab/affinity"
)

// KeepGeneratorsFree keeps the last slots processors the calling process
// may use free of its own work, for the load children of the runs it will
// run (affinity.KeepFree; pass free as Config.Generator): a server's pages
// and the fan-out of a run's rows to a watching class then run on the
// processors it kept, beside the labs (which take theirs from the same),
// never where a generator times its sends. It sets GOMAXPROCS for the
// processors kept (unless the GOMAXPROCS environment variable fixes it).
// Call it once, at the process's start, never from a request.
//
// It returns the free processors and the kept ones, both nil when it kept
// none (the process may use no more than slots processors, or err: the
// system has no processor affinity), and undo, which puts the process back
// (for a server whose run returns, and the tests).
func KeepGeneratorsFree(slots int) (free, kept []int, undo func() error, err error) {
	free, pin, err := affinity.KeepFree(slots)
	if err != nil || free == nil {
		return nil, nil, func() error { return nil }, err
	}
	setProcs := func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.SetDefaultGOMAXPROCS()
		}
	}
	undo = func() error {
		err := pin.Restore()
		setProcs()
		return err
	}
	setProcs()
	if kept, err = affinity.Allowed(); err != nil {
		return nil, nil, func() error { return nil }, errors.Join(err, undo())
	}
	return free, kept, undo, nil
}
