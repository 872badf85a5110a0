package classroom

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchClassSize is the simulated class.
const benchClassSize = 300

// benchLessons is a lesson with enough questions for many rounds.
func benchLessons(slug string) (Lesson, error) {
	l := Lesson{Slug: slug, Title: "bench"}
	for i := range 100 {
		l.Questions = append(l.Questions, Question{ID: "q" + strconv.Itoa(i), Type: "predict", Text: "Which of these four is right?",
			Options: []string{"a", "b", "c", "d"}, Correct: "a", Explain: benchExplain})
	}
	return l, nil
}

// benchExplain is an explanation per option about as long as the
// lessons' (300 to 400 characters of HTML each).
var benchExplain = map[string]string{
	"a": "<p>" + strings.Repeat("One worker finishes one request every 20 ms. ", 8) + "</p>",
	"b": "<p>" + strings.Repeat("That is the processor ceiling, not the worker's. ", 7) + "</p>",
	"c": "<p>" + strings.Repeat("A worker only finishes what it has time for. ", 8) + "</p>",
	"d": "<p>" + strings.Repeat("The queue grows without bound above the ceiling. ", 7) + "</p>",
}

// BenchmarkClass300 simulates a class of 300 participants on loopback,
// each with its own websocket, against a real SQLite file. One iteration is
// one question: the host opens it, all 300 vote at the same moment (the
// worst case: a burst), then the host reveals the spread, then the
// answer. It reports, at p50 and p99 over every vote and every
// participant:
//
//	vote-tally-*   from a participant sending its vote to the host's
//	               websocket receiving the tally that counts it
//	reveal-all-*   from the host sending reveal to each participant's
//	               websocket receiving the distribution
//	answer-all-*   from the host sending answer to each participant's
//	               websocket receiving the answer with the four
//	               explanations
//
// The goal is p99 under 200 ms for all three. Run with a fixed count:
//
//	go test ./classroom -run '^$' -bench 'Class300$' -benchtime 10x
func BenchmarkClass300(b *testing.B) { benchClass(b, 0) }

// BenchmarkClass300Spread is BenchmarkClass300 with the votes spread
// evenly over two seconds, as a room votes when the question opens.
func BenchmarkClass300Spread(b *testing.B) { benchClass(b, 2*time.Second) }

func benchClass(b *testing.B, spread time.Duration) {
	e := newEnvTB(b, Config{Lessons: benchLessons})
	ctx := context.Background()
	s, tok, err := e.m.Create(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	type arrival struct {
		pid int
		at  time.Time
	}
	tallies := make(chan arrival, benchClassSize*2)
	reveals := make(chan arrival, benchClassSize*2)
	answers := make(chan arrival, benchClassSize*2)
	opens := make(chan int, benchClassSize*2)
	states := make(chan int, benchClassSize*2)
	var wg sync.WaitGroup
	reader := func(c *client, pid int) {
		defer wg.Done()
		for {
			_, data, err := c.ws.ReadMessage()
			if err != nil {
				return
			}
			now := time.Now()
			var o Out
			if json.Unmarshal(data, &o) != nil {
				continue
			}
			switch o.Kind {
			case KindState:
				states <- pid
			case KindTally:
				tallies <- arrival{o.Participant.ID, now}
			case KindRevealed:
				reveals <- arrival{pid, now}
			case KindAnswered:
				answers <- arrival{pid, now}
			case KindRound:
				if o.Status == "open" {
					opens <- pid
				}
			case KindError:
				b.Errorf("participant %d: %s", pid, o.Message)
			}
		}
	}
	// Every client reads from the moment it connects, as a browser does
	// (a client that stops reading for writeWait is dropped).
	host := e.dial("host", s.Code(), url.Values{"token": {tok}})
	wg.Add(1)
	go reader(host, 0)
	var ps []*client
	for i := range benchClassSize {
		_, ptok := mustJoin(b, s, "")
		p := e.dial("p", s.Code(), url.Values{"p": {ptok}})
		ps = append(ps, p)
		wg.Add(1)
		go reader(p, i+1)
	}
	// wait takes from a channel, failing rather than hanging if a
	// message never comes.
	wait := func(what string, c chan arrival) arrival {
		select {
		case a := <-c:
			return a
		case <-time.After(20 * time.Second):
			b.Fatalf("no %s message within 20 s", what)
			return arrival{}
		}
	}
	// A dial returns when the upgrade is answered, a moment before the
	// server registers the connection; its state message marks that.
	for range benchClassSize + 1 {
		select {
		case <-states:
		case <-time.After(20 * time.Second):
			b.Fatal("not every client got its state within 20 s")
		}
	}
	var voteLat, revealLat, answerLat []time.Duration
	sent := make([]time.Time, benchClassSize+1)

	b.ResetTimer()
	for i := range b.N {
		q := "q" + strconv.Itoa(i%100)
		if i >= 100 {
			b.Fatal("at most 100 iterations: one question each")
		}
		host.send(In{Kind: KindOpen, Question: q})
		for range benchClassSize + 1 {
			select {
			case <-opens:
			case <-time.After(20 * time.Second):
				b.Fatal("the round's opening did not reach everyone within 20 s")
			}
		}
		var send sync.WaitGroup
		t0 := time.Now()
		for j, p := range ps {
			send.Add(1)
			go func() {
				defer send.Done()
				if spread > 0 {
					time.Sleep(time.Until(t0.Add(spread * time.Duration(j) / benchClassSize)))
				}
				sent[j+1] = time.Now()
				p.ws.WriteJSON(In{Kind: KindVote, Question: q, Option: string(rune('a' + j%4))})
			}()
		}
		send.Wait()
		for range benchClassSize {
			a := wait("tally", tallies)
			voteLat = append(voteLat, a.at.Sub(sent[a.pid]))
		}
		start := time.Now()
		host.send(In{Kind: KindReveal, Question: q})
		for range benchClassSize + 1 {
			a := wait("revealed", reveals)
			if a.pid != 0 {
				revealLat = append(revealLat, a.at.Sub(start))
			}
		}
		start = time.Now()
		host.send(In{Kind: KindAnswer, Question: q})
		for range benchClassSize + 1 {
			a := wait("answer", answers)
			if a.pid != 0 {
				answerLat = append(answerLat, a.at.Sub(start))
			}
		}
	}
	b.StopTimer()
	reportLatency(b, "vote-tally", voteLat)
	reportLatency(b, "reveal-all", revealLat)
	reportLatency(b, "answer-all", answerLat)
	host.ws.Close()
	for _, p := range ps {
		p.ws.Close()
	}
	wg.Wait()
}

// reportLatency reports the p50, p99 (nearest rank) and largest of ds in
// milliseconds as name-p50-ms, name-p99-ms and name-max-ms.
func reportLatency(b *testing.B, name string, ds []time.Duration) {
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		k := int(p*float64(len(ds))+0.999999) - 1
		return ds[max(k, 0)]
	}
	b.ReportMetric(float64(rank(0.50).Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(rank(0.99).Microseconds())/1000, name+"-p99-ms")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds())/1000, name+"-max-ms")
}
