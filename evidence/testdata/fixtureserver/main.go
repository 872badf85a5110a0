// Command fixtureserver is the small HTTP service the vegeta fixtures in
// evidence/testdata were recorded against (see testdata/README.md). By the
// count of requests it has taken, it answers each 5th 503, each 11th 429,
// each 13th 500, holds each 7th for 300 ms (past the attack's -timeout
// 200ms, so vegeta gives up on it) and answers the rest 200 after 2 ms.
package main

import (
	"flag"
	"log"
	"net/http"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18220", "address to listen on (127.0.0.1 only)")
	flag.Parse()
	var n atomic.Int64
	h := func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		switch {
		case k%5 == 0:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case k%11 == 0:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case k%13 == 0:
			http.Error(w, "broken", http.StatusInternalServerError)
		case k%7 == 0:
			time.Sleep(300 * time.Millisecond)
			w.Write([]byte("late\n"))
		default:
			time.Sleep(2 * time.Millisecond)
			w.Write([]byte("ok\n"))
		}
	}
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(h)))
}
