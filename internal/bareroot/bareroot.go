// Package bareroot checks, from a command's tests, that the command's
// build trusts the public CA roots where the container image runs it:
// FROM scratch, with no /etc (no /etc/ssl, no CA bundle), no
// SSL_CERT_FILE or SSL_CERT_DIR, as the unprivileged user 65532. There an
// HTTPS client with no roots of its own (an LTI platform's keys, tokens
// and scores; the proxy's https:// UPSTREAM) verifies against the roots
// the binary embeds (golang.org/x/crypto/x509roots/fallback) or none.
//
// CheckPublicRoots copies the running test binary (a command's test
// binary carries everything its main package imports) into an empty
// directory, runs it chrooted there as 65532 with an empty environment,
// and has it verify a real public chain (www.google.com's of January 2023,
// from Go's own tests: the leaf and GTS CA 1C3, rooted at GTS Root R1) at
// a time the chain was valid, with the system's roots, as an http.Client's
// TLS does. There is no network here for a real call; that verification
// is the step that refused the calls ("x509: certificate signed by
// unknown authority").
package bareroot

import (
	"crypto/x509"
	"debug/elf"
	_ "embed"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

//go:embed public-chain.pem
var publicChain []byte

// childEnv, set, makes CheckPublicRoots verify the chain in this process
// (the one it started in the bare root) instead of starting one.
const childEnv = "CAPACITYLAB_TEST_BARE_ROOT"

// The image's user.
const imageUID = 65532

// CheckPublicRoots is the whole of a test: call it from a test of the
// command's package, which it runs again in the bare root by its name.
// It skips where it cannot make a bare root: not root (chroot needs it),
// or a test binary linked dynamically (cgo, as -race builds; the image's
// binaries are static).
func CheckPublicRoots(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		verifyPublicChain(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("a bare root needs chroot, which needs root; this test runs as uid", os.Geteuid())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	f.Close()
	if dynamic {
		t.Skip("this test binary is linked dynamically (cgo, as -race needs): a bare root has no loader to run it; the image's binaries are static (CGO_ENABLED=0)")
	}

	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, filepath.Join(root, "command.test"))
	cmd := exec.Command("/command.test", "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Dir = "/"
	cmd.Env = []string{childEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: imageUID, Gid: imageUID, Groups: []uint32{}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a bare root as %d, this build does not trust a public root (%v):\n%s", imageUID, err, out)
	}
	if !strings.Contains(string(out), "verified www.google.com") {
		t.Fatalf("the bare run passed without verifying the chain:\n%s", out)
	}
}

// verifyPublicChain runs in the bare root: it checks that the root is bare
// (so no system bundle can be what verifies), then verifies the chain.
func verifyPublicChain(t *testing.T) {
	if _, err := os.Stat("/etc"); !os.IsNotExist(err) {
		t.Fatalf("/etc is there (%v): this root is not bare", err)
	}
	if uid := os.Getuid(); uid != imageUID {
		t.Fatalf("running as uid %d, want the image's %d", uid, imageUID)
	}
	var certs []*x509.Certificate
	for rest := publicChain; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) < 2 {
		t.Fatalf("%d certificates in the chain, want a leaf and its intermediate", len(certs))
	}
	intermediates := x509.NewCertPool()
	for _, c := range certs[1:] {
		intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{
		DNSName:       "www.google.com",
		Intermediates: intermediates,
		CurrentTime:   time.Date(2023, time.February, 1, 0, 0, 0, 0, time.UTC),
		// Roots unset: the system's, as an http.Client's TLS uses.
	})
	if err != nil {
		t.Fatal(err)
	}
	top := chains[0][len(chains[0])-1]
	t.Logf("verified www.google.com up to %s", top.Subject.CommonName)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
