package main

import (
	"crypto/x509"
	"debug/elf"
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

// rootsCheckEnv, set to the PEM of a chain, makes
// TestPublicRootsInBareImage verify that chain in this process instead of
// starting one: the process TestPublicRootsInBareImage starts in a bare
// root.
const rootsCheckEnv = "CAPACITYLAB_TEST_ROOTS_CHAIN"

// The image is FROM scratch: no /etc/ssl, no SSL_CERT_FILE, a user with no
// home. A platform's keys, its token endpoint and its score service are
// reached over HTTPS, whose client (RootCAs unset) verifies the platform's
// certificate against the system roots; with none there, every LTI launch
// failed "x509: certificate signed by unknown authority". The server
// embeds the public roots (golang.org/x/crypto/x509roots/fallback), which
// Go uses when the system has none.
//
// This test runs this package's binary (main.go and its imports, built
// static as the image's is) chrooted into a directory holding nothing but
// itself, as the image's unprivileged user 65532 with an empty
// environment, and has it verify a real public chain (www.google.com's of
// January 2023, from Go's own tests: leaf, GTS CA 1C3, rooted at GTS Root
// R1) at a time the chain was valid, with the roots an http.Client uses.
// We have no network to make a real call; the verification is the step
// that refused the launches.
func TestPublicRootsInBareImage(t *testing.T) {
	if chain := os.Getenv(rootsCheckEnv); chain != "" {
		verifyPublicChain(t, chain)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("a bare root needs chroot, which needs root; this test runs as uid", os.Geteuid())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := elf.Open(self); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				f.Close()
				t.Skip("this test binary is linked dynamically (cgo, as -race needs): a bare root has no loader to run it; the image's server is static (CGO_ENABLED=0)")
			}
		}
		f.Close()
	}
	chain, err := os.ReadFile("testdata/public-chain.pem")
	if err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, filepath.Join(root, "server.test"))

	cmd := exec.Command("/server.test", "-test.run=^TestPublicRootsInBareImage$", "-test.v")
	cmd.Dir = "/"
	cmd.Env = []string{rootsCheckEnv + "=" + string(chain)}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: 65532, Gid: 65532, Groups: []uint32{}},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in a bare root as 65532, the server's build does not trust a public root (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "verified www.google.com") {
		t.Fatalf("the bare run passed without verifying the chain:\n%s", out)
	}
}

// verifyPublicChain runs in the bare root: it checks that the root is bare
// (so no system bundle can be what verifies), then verifies the chain.
func verifyPublicChain(t *testing.T, chain string) {
	if _, err := os.Stat("/etc"); !os.IsNotExist(err) {
		t.Fatalf("/etc is there (%v): this root is not bare", err)
	}
	if uid := os.Getuid(); uid != 65532 {
		t.Fatalf("running as uid %d, want the image's 65532", uid)
	}
	var certs []*x509.Certificate
	for rest := []byte(chain); ; {
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
