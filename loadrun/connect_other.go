//go:build !linux

package loadrun

import (
	"errors"
	"net/netip"
	"os"
)

// directConnect is false here: complete dials with net.Dialer.
const directConnect = false

func connectStart(netip.AddrPort) (int, error) {
	return -1, errors.New("direct connect is only used on Linux")
}

func connectWait(*os.File) error { return errors.New("direct connect is only used on Linux") }

func writeEarly(int, []byte) (int, error) { return 0, nil }
