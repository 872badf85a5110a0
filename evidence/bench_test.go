package evidence

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
	"unsafe"

	"capacitylab/result"
)

// BenchmarkRead1M reads a load CSV of 1,000,000 records (10 windows of
// 20 s of Poisson arrivals at 1,000 to 10,000 a second, cut at the
// millionth in the last, every outcome among them, written by
// result.WriteCSV to a temporary file) with Read, as an upload of that
// size is read. Besides ns/op and B/op it reports peak-heap-MB: the most
// heap held by live and not yet collected objects
// (runtime/metrics /memory/classes/heap/objects:bytes) sampled every
// millisecond while Read runs, after a GC before each read, and
// records-MB: the records' own share of it.
//
//	go test ./evidence -run '^$' -bench Read1M -benchtime 5x
func BenchmarkRead1M(b *testing.B) {
	const n = 1_000_000
	rates := []float64{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000}
	var recs []result.Record
	for w, rate := range rates {
		part := loadRecords(uint64(w+1), []float64{20}, []float64{rate})
		for i := range part {
			part[i].Window = w
		}
		recs = append(recs, part...)
	}
	if len(recs) < n {
		b.Fatalf("generated %d records, want at least %d", len(recs), n)
	}
	recs = recs[:n]
	path := filepath.Join(b.TempDir(), "records.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	if err := result.WriteCSV(bw, recs); err != nil {
		b.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	recs = nil
	// file: Read is given the file, whose size it sizes the records by;
	// stream: a reader that hides the size (as a wrapped upload would),
	// so the records grow as they are read.
	for _, mode := range []string{"file", "stream"} {
		b.Run(mode, func(b *testing.B) {
			readBench(b, path, fi.Size(), n, len(rates), mode == "stream")
		})
	}
}

func readBench(b *testing.B, path string, size int64, n, windows int, hide bool) {
	b.SetBytes(size)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		})
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		var r io.Reader = f
		if hide {
			r = struct{ io.Reader }{f}
		}
		ds, err := Read("records.csv", r, DefaultLimits())
		b.StopTimer()
		close(stop)
		wg.Wait()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(ds.Records) != n || len(ds.Windows) != windows {
			b.Fatalf("read %d records in %d windows, want %d in %d", len(ds.Records), len(ds.Windows), n, windows)
		}
		b.ReportMetric(float64(cap(ds.Records))*float64(unsafe.Sizeof(result.Record{}))/(1<<20), "records-MB")
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
