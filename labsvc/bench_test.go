package labsvc_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"capacitylab/labsvc"
)

// BenchmarkDoor measures the lab's own path, door → queue → worker → answer,
// with SPIN_MS=0 and WAIT_MS=0, a fresh TCP connection per request on
// 127.0.0.1. Run it on one processor (the client shares it, so the figure is
// conservative):
//
//	go test -run '^$' -bench BenchmarkDoor -cpu 1 -benchtime 20000x ./labsvc
//
// req/s is requests answered per second of wall time; allocs/op counts the
// client's allocations as well as the lab's.
func BenchmarkDoor(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(map[int]string{1: "workers=1", 4: "workers=4"}[workers], func(b *testing.B) {
			l := startLab(b, cfg(workers, 0, 0, 0))
			req := []byte("GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
			b.ReportAllocs()
			b.SetParallelism(8)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 512)
				for pb.Next() {
					c, err := net.Dial("tcp", l.addr)
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						c.Close()
						return
					}
					n, err := io.ReadFull(c, buf[:12])
					if err != nil || !bytes.Equal(buf[:n], []byte("HTTP/1.1 200")) {
						b.Errorf("answer %q, %v", buf[:n], err)
					}
					for err == nil {
						_, err = c.Read(buf)
					}
					c.Close()
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

// BenchmarkDoorChild runs the same path in a lab child pinned to one
// processor (CPUS=1) while this process, on the other processors, is the
// client. Besides req/s it reports what the lab itself spent per request,
// read from the lab: lab-cpu-us/req (process_cpu_ms from /stats, user +
// system), lab-allocs/req (go_memstats_mallocs_total from /metrics), and
// lab-capacity-req/s = 1e6 / lab-cpu-us/req, the rate one processor could
// sustain on the lab's overhead alone.
//
//	go test -run '^$' -bench BenchmarkDoorChild -benchtime 20000x ./labsvc
func BenchmarkDoorChild(b *testing.B) {
	c, err := labsvc.StartChild(b.Context(), testChild(b, "serve"), cfg(1, 0, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	addr, err := net.ResolveTCPAddr("tcp", hostport(c.Target()))
	if err != nil {
		b.Fatal(err)
	}
	req := []byte("GET / HTTP/1.1\r\nHost: lab\r\n\r\n")
	mallocs0 := labMallocs(b, c.Control())
	doJSON(b, "POST", c.Control()+"/reset", "", nil)
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 512)
		for pb.Next() {
			conn, err := net.DialTCP("tcp", nil, addr)
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := conn.Write(req); err != nil {
				b.Error(err)
			}
			for err == nil {
				_, err = conn.Read(buf)
			}
			conn.Close()
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	var st labsvc.Stats
	doJSON(b, "POST", c.Control()+"/reset", "", &st)
	mallocs := labMallocs(b, c.Control()) - mallocs0
	if st.Done != int64(b.N) {
		b.Errorf("lab served %d of %d requests", st.Done, b.N)
	}
	cpuPer := st.ProcessCPUMS * 1000 / float64(b.N)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(cpuPer, "lab-cpu-us/req")
	b.ReportMetric(1e6/cpuPer, "lab-capacity-req/s")
	b.ReportMetric(mallocs/float64(b.N), "lab-allocs/req")
}

// labMallocs reads go_memstats_mallocs_total from a lab's /metrics (it
// includes the allocations of serving /metrics itself, a few hundred per
// call, so it is meaningful over thousands of requests).
func labMallocs(b *testing.B, control string) float64 {
	return metric(b, control, "go_memstats_mallocs_total")
}

// BenchmarkChildStart measures starting a lab child and getting its first
// answer (the supervisor's start-up cost).
//
//	go test -run '^$' -bench BenchmarkChildStart -benchtime 20x ./labsvc
func BenchmarkChildStart(b *testing.B) {
	for b.Loop() {
		c, err := labsvc.StartChild(b.Context(), testChild(b, "serve"), cfg(1, 0, 0, 0))
		if err != nil {
			b.Fatal(err)
		}
		if r, err := call(hostport(c.Target()), 5*time.Second); err != nil || r.status != 200 {
			b.Fatalf("first answer %+v, %v", r, err)
		}
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}
