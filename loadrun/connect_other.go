//go:build !linux

package loadrun

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"time"
)

// directConnect is false here: complete dials with net.Dialer.
const directConnect = false

// sockaddr is Linux's; here it is never used.
type sockaddr struct{}

func newSockaddr(netip.AddrPort) sockaddr { return sockaddr{} }

func connectStart(*sockaddr) (int, error) {
	return -1, errors.New("direct connect is only used on Linux")
}

func connectWait(*os.File) error { return errors.New("direct connect is only used on Linux") }

func writeEarly(int, []byte) (int, error) { return 0, nil }

// holdArrivalStamps is Linux's; here there are no stamps to hold.
func holdArrivalStamps() (release func()) { return func() {} }

// arrivalReader is Linux's; here begin never connects a socket, so none
// is made.
type arrivalReader struct{}

func newArrivalReader(context.Context, int, time.Time) *arrivalReader { return &arrivalReader{} }

func (*arrivalReader) file() (*os.File, error) { return nil, errors.New("not used") }

func (*arrivalReader) Read([]byte) (int, error) { return 0, errors.New("not used") }

func (*arrivalReader) Close() error { return nil }

func (*arrivalReader) arrival() time.Time { return time.Time{} }

func (*arrivalReader) late() bool { return false }
