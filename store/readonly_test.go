package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readOnlyChildEnv, set, makes TestOpenSaysReadOnly the child that opens
// the stores: its value is the parent of the writable and read-only
// directories.
const readOnlyChildEnv = "CAPACITYLAB_READONLY_CHILD"

// nobody is the unprivileged user the test runs its child as when it runs
// as root.
const nobody = 65534

// TestOpenSaysReadOnly checks that opening a store in a directory this
// process may not write fails saying "read-only" and naming the
// directory, not SQLite's "unable to open database file (14)"; and that a
// file in a writable directory beside it opens, so what refused it was
// the directory's permissions. Root ignores permissions, so as root the
// test runs itself again as user 65534 (nobody) and checks what that
// child says.
func TestOpenSaysReadOnly(t *testing.T) {
	if parent := os.Getenv(readOnlyChildEnv); parent != "" {
		for _, name := range []string{"rw", "ro", "rofile"} {
			s, err := Open(filepath.Join(parent, name, "lab.db"))
			if err == nil {
				s.Close()
			}
			fmt.Printf("%s: %v (read-only: %v)\n", name, err, errors.Is(err, ErrReadOnly))
		}
		return
	}
	parent := t.TempDir()
	rw, ro, rofile := filepath.Join(parent, "rw"), filepath.Join(parent, "ro"), filepath.Join(parent, "rofile")
	for _, d := range []string{rw, ro, rofile} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// A store made here, then left read-only in a writable directory.
	s, err := Open(filepath.Join(rofile, "lab.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{rw, 0o777}, {rofile, 0o777}, {ro, 0o555}, {filepath.Join(rofile, "lab.db"), 0o444}} { // past the umask
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() != 0 {
		if s, err := Open(filepath.Join(rw, "lab.db")); err != nil {
			t.Fatalf("a writable directory: %v", err)
		} else {
			s.Close()
		}
		_, err := Open(filepath.Join(ro, "lab.db"))
		checkReadOnly(t, err, "the directory "+ro)
		_, err = Open(filepath.Join(rofile, "lab.db"))
		checkReadOnly(t, err, "the file "+filepath.Join(rofile, "lab.db"))
		return
	}
	// As root: the child must reach the directories and run the test
	// binary, so both are opened to others.
	for _, d := range []string{parent, filepath.Dir(parent)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(parent, "store.test")
	if err := copyFile(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOpenSaysReadOnly$")
	cmd.Env = append(os.Environ(), readOnlyChildEnv+"="+parent, "HOME="+parent)
	cmd.Dir = parent
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("running as root without the right to become user %d, so a read-only directory cannot be made to refuse: %v", nobody, err)
	}
	if err != nil {
		t.Fatalf("the child as user %d: %v\n%s", nobody, err, out)
	}
	lines := strings.Split(string(out), "\n")
	var rwLine, roLine, rofileLine string
	for _, l := range lines {
		if strings.HasPrefix(l, "rofile: ") {
			rofileLine = l
		}
		if strings.HasPrefix(l, "rw: ") {
			rwLine = l
		}
		if strings.HasPrefix(l, "ro: ") {
			roLine = l
		}
	}
	if rwLine != "rw: <nil> (read-only: false)" {
		t.Fatalf("the child as user %d could not open a store in a writable directory, so the test proves nothing: %q\n%s", nobody, rwLine, out)
	}
	t.Logf("as user %d:\n%s\n%s", nobody, roLine, rofileLine)
	if !strings.HasSuffix(roLine, "(read-only: true)") || !strings.Contains(roLine, "the directory "+ro+" is read-only") || strings.Contains(roLine, "unable to open") {
		t.Errorf("a read-only directory, as user %d: %q; want it to say the directory is read-only", nobody, roLine)
	}
	if !strings.HasSuffix(rofileLine, "(read-only: true)") || !strings.Contains(rofileLine, "the file "+filepath.Join(rofile, "lab.db")+" is read-only") {
		t.Errorf("a read-only file, as user %d: %q; want it to say the file is read-only", nobody, rofileLine)
	}
}

// checkReadOnly checks that err says what (the directory or the file
// named) is read-only.
func checkReadOnly(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), what+" is read-only") || strings.Contains(err.Error(), "unable to open") {
		t.Errorf("%s: %v; want it to say it is read-only", what, err)
	}
}

// copyFile copies the running test binary to dst.
func copyFile(dst string, mode os.FileMode) error {
	src, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
