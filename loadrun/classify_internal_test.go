package loadrun

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"capacitylab/result"
)

func TestClassify(t *testing.T) {
	op := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		err     error
		outcome result.Outcome
		reason  string
	}{
		// The deadline passed: the caller gave up, in the phase given.
		{"deadline", context.Background(), &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, result.Gaveup, result.ReasonReadTimeout},
		// Nothing listening.
		{"refused", context.Background(), op(syscall.ECONNREFUSED), result.Error, result.ReasonConnRefused},
		// The peer aborted.
		{"reset", context.Background(), op(syscall.ECONNRESET), result.Error, result.ReasonReset},
		// Writing to a closed peer.
		{"broken pipe", context.Background(), op(syscall.EPIPE), result.Error, result.ReasonReset},
		// This process is out of file descriptors.
		{"emfile", context.Background(), op(syscall.EMFILE), result.Error, result.ReasonEMFILE},
		// The system is out of file descriptors.
		{"enfile", context.Background(), op(syscall.ENFILE), result.Error, result.ReasonEMFILE},
		// Out of ephemeral ports.
		{"eaddrnotavail", context.Background(), op(syscall.EADDRNOTAVAIL), result.Error, result.ReasonEADDRNOTAVAIL},
		// The reply stopped short.
		{"unexpected eof", context.Background(), io.ErrUnexpectedEOF, result.Error, result.ReasonEOF},
		// Anything unrecognised takes the phase's fallback reason.
		{"unknown", context.Background(), errors.New("malformed HTTP response"), result.Error, result.ReasonMalformed},
		// The errors of a socket Target.begin connected itself (an *os.File):
		// a refused connect reported by connect(2) or SO_ERROR,
		{"direct refused", context.Background(), os.NewSyscallError("connect", syscall.ECONNREFUSED), result.Error, result.ReasonConnRefused},
		// a reset while reading,
		{"direct reset", context.Background(), &os.PathError{Op: "read", Path: "tcp", Err: syscall.ECONNRESET}, result.Error, result.ReasonReset},
		// and the file's deadline passing.
		{"direct deadline", context.Background(), &os.PathError{Op: "read", Path: "tcp", Err: os.ErrDeadlineExceeded}, result.Gaveup, result.ReasonReadTimeout},
		// Cancellation wins over whatever the cancelled call returned.
		{"cancelled", cancelled, op(syscall.ECONNRESET), result.Error, result.ReasonCanceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, r := classify(c.ctx, c.err, result.ReasonReadTimeout, result.ReasonMalformed)
			if o != c.outcome || r != c.reason {
				t.Errorf("classify(%v) = %v/%q, want %v/%q", c.err, o, r, c.outcome, c.reason)
			}
		})
	}
}
