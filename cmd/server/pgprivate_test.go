package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// privatePostgres is a PostgreSQL server of one test's own: initdb into a
// temporary directory, listening on 127.0.0.1 on a free port, so the test
// may stop and restart it mid-run without disturbing the machine's
// cluster, which other packages' tests use at the same time. Run as root
// (as CI runs), it runs as the postgres user, which the Debian package
// makes; PostgreSQL refuses to run as root.
type privatePostgres struct {
	t    *testing.T
	bin  string // the directory of initdb and postgres
	dir  string // its data directory
	sock string // its socket directory
	port int
	cred *syscall.Credential // nil: run as this user
	cmd  *exec.Cmd
	done chan struct{}
}

// startPrivatePostgres starts a private PostgreSQL, or skips the test,
// loudly, when the machine has no PostgreSQL server programs.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		t.Skip("SKIPPED (not run): no PostgreSQL server programs under /usr/lib/postgresql/*/bin; install Debian's postgresql package to run this end-to-end test")
	}
	slices.Sort(bins)
	p := &privatePostgres{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	root, err := os.MkdirTemp("", "capacitylab-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	p.dir, p.sock = filepath.Join(root, "data"), filepath.Join(root, "sock")
	if err := os.Mkdir(p.sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		for _, d := range []string{root, p.sock} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	initdb := exec.Command(filepath.Join(p.bin, "initdb"), "-D", p.dir, "-U", "capacitylab", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	p.start()
	t.Cleanup(p.stop)
	return p
}

// URL is the database URL of the private server's postgres database.
func (p *privatePostgres) URL() string {
	return fmt.Sprintf("postgres://capacitylab@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// start starts the server and waits until it takes connections.
func (p *privatePostgres) start() {
	p.t.Helper()
	// fsync off: this server's data is thrown away after the test, and a
	// restart here is a clean one (stop), which loses nothing committed.
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", p.dir, "-p", strconv.Itoa(p.port), "-k", p.sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true}
	log, err := os.Create(filepath.Join(p.t.TempDir(), "postgres.log"))
	if err != nil {
		p.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); log.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.URL())
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		select {
		case <-p.done:
			out, _ := os.ReadFile(log.Name())
			p.t.Fatalf("postgres exited at start:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("postgres took no connection in 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop shuts the server down the fast way (SIGINT: clients are
// disconnected, everything committed is kept) and waits for it.
func (p *privatePostgres) stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// restart stops the server and starts it again on the same port and data.
func (p *privatePostgres) restart() {
	p.t.Helper()
	p.stop()
	p.start()
}

func TestPrivatePostgres(t *testing.T) {
	p := startPrivatePostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	p.restart()
	conn, err = pgx.Connect(ctx, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM kept").Scan(&n); err != nil || n != 7 {
		t.Fatalf("after a restart: %d, %v", n, err)
	}
}
