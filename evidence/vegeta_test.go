package evidence

import (
	"bytes"
	"context"
	"errors"
	"go/build"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// findVegeta is the vegeta binary on PATH or in GOPATH/bin, or "" and
// where it was looked for.
func findVegeta() (string, string) {
	if p, err := exec.LookPath("vegeta"); err == nil {
		return p, ""
	}
	gobin := filepath.Join(build.Default.GOPATH, "bin", "vegeta")
	if fi, err := os.Stat(gobin); err == nil && !fi.IsDir() {
		return gobin, ""
	}
	return "", "vegeta on PATH and " + gobin + " (go install github.com/tsenart/vegeta/v12@v12.13.0)"
}

// The real vegeta attacks a server in the test, its results are encoded
// as CSV, and Read finds in them what the server answered.
func TestReadVegetaLive(t *testing.T) {
	vegeta, looked := findVegeta()
	if vegeta == "" {
		t.Skip("vegeta not found: looked for " + looked)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Each 4th request taken is refused (503), the rest answered 200.
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "results.bin")
	attack := exec.CommandContext(ctx, vegeta, "attack", "-name", "live", "-rate", "50", "-duration", "1s", "-timeout", "2s", "-output", bin)
	attack.Stdin = strings.NewReader("GET http://" + ln.Addr().String() + "/\n")
	if out, err := attack.CombinedOutput(); err != nil {
		t.Fatalf("vegeta attack: %v\n%s", err, out)
	}
	var csvOut, stderr bytes.Buffer
	encode := exec.CommandContext(ctx, vegeta, "encode", "-to", "csv", bin)
	encode.Stdout, encode.Stderr = &csvOut, &stderr
	if err := encode.Run(); err != nil {
		t.Fatalf("vegeta encode: %v\n%s", err, stderr.Bytes())
	}
	ds, err := Read("live.csv", &csvOut, DefaultLimits())
	if err != nil {
		var le *LineError
		if errors.As(err, &le) {
			t.Fatalf("Read of vegeta's own CSV: %v", err)
		}
		t.Fatal(err)
	}
	// vegeta sends rate × duration requests: 50, of which the server
	// refused the 4th, 8th, ... 48th.
	if got := counts(ds.Records, 0); len(ds.Windows) != 1 || ds.Windows[0].Label != "live" || got["ok"] != 38 || got["refused"] != 12 || len(ds.Records) != 50 {
		t.Fatalf("windows %+v, outcomes %v of %d: want one window live with 38 ok and 12 refused of 50", ds.Windows, got, len(ds.Records))
	}
	checkNumbered(t, ds)
	// Its sends are paced evenly at 50 a second; a busy machine can delay
	// some, so the rate read back is checked within 10%.
	if w := ds.Windows[0]; math.Abs(w.Offered-50) > 5 {
		t.Errorf("offered %v, want 50 within 10%%", w.Offered)
	}
	if int(n.Load()) != len(ds.Records) {
		t.Errorf("the server took %d requests, the file holds %d", n.Load(), len(ds.Records))
	}
}
