package labsvc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Workers spinning on one, two or three processors, a few more workers
// than processors with pauses between their spins (so the line of spins
// waiting for a turn is often empty, as in a lab whose workers wait on a
// downstream between spins), and many more without pauses: every
// spin is computed to its end (none is left waiting with nobody to compute
// it), and when all are over no processor is still counted as taken and
// no spin is left in the line. With CPUS > 1 a runner's own spin can be
// finished by another runner while it computes a third spin; handing that
// third spin on to a worker that is itself a runner lost the spin (its
// worker waited for it forever) and left a processor counted as taken
// (so fewer processors computed from then on), which made a CPUS=2 lab
// level off at one processor's ceiling and then hang with a request in
// service.
func TestProcessorsLoseNoSpin(t *testing.T) {
	for _, tc := range []struct {
		n, workers int
		pause      time.Duration
	}{
		{1, 3, 200 * time.Microsecond}, {1, 16, 0},
		{2, 3, 200 * time.Microsecond}, {2, 4, 400 * time.Microsecond}, {2, 16, 0},
		{3, 5, 300 * time.Microsecond}, {3, 16, 0},
	} {
		n, workers := tc.n, tc.workers
		t.Run(fmt.Sprintf("cpus=%d,workers=%d,pause=%v", n, workers, tc.pause), func(t *testing.T) {
			const spins = 200
			const d = 600 * time.Microsecond // a few quanta, so turns pass
			p := newProcessors(n)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			short := make(chan string, workers*spins)
			for w := range workers {
				wg.Go(func() {
					var s spinner
					for i := range spins {
						if used, _, _ := s.spin(ctx, d, p); used < d && ctx.Err() == nil {
							short <- fmt.Sprintf("worker %d spin %d used %v of %v", w, i, used, d)
						}
						if tc.pause > 0 {
							time.Sleep(time.Duration(w+1) * tc.pause / time.Duration(workers))
						}
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				p.mu.Lock()
				running, waiting := p.running, p.line.n
				p.mu.Unlock()
				cancel()
				<-done
				t.Fatalf("%d workers × %d spins of %v on %d processor(s) were not over after 20 s (%v of processor work): a spin was left with nobody to compute it (running %d, %d in the line)",
					workers, spins, d, n, time.Duration(workers*spins)*d, running, waiting)
			}
			close(short)
			for s := range short {
				t.Error(s)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.running != 0 || p.line.n != 0 {
				t.Errorf("after every spin ended: %d processor(s) counted as taken and %d spin(s) in the line, want 0 and 0", p.running, p.line.n)
			}
		})
	}
}
