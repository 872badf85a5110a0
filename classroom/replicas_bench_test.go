package classroom

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkClass300Replicas is BenchmarkClass300 across two servers
// (Managers, each with its own Store, websocket server and listening
// connection) sharing one Postgres schema (CAPACITYLAB_TEST_POSTGRES):
// the host on A, the projector on B, the 300 participants joined and
// connected half on A, half on B. One iteration is one question: the
// host opens it, all 300 vote at the same moment, the host reveals the
// spread, then the answer. It reports, at p50, p99 and the largest:
//
//	vote-projector-*  from a participant sending its vote to the
//	                  projector's websocket on B receiving the tally that
//	                  counts it (B's own participants' votes are told
//	                  there after B's commit; A's after A's commit, its
//	                  notification and B's read of the session)
//	vote-host-*       the same to the host's websocket on A
//	reveal-all-*      from the host sending reveal to each participant's
//	                  websocket, on either server, receiving the spread
//	answer-all-*      the same for the answer
//
// A projector's tally carries only the count, not whose vote it is, so a
// second host socket on B names the vote each projector tally counts:
// both get the same broadcast, with the same seq. The goal is
// p99 under 200 ms. Run with a fixed count:
//
//	CAPACITYLAB_TEST_POSTGRES=postgres://... go test ./classroom -run '^$' -bench 'Class300Replicas$' -benchtime 10x
func BenchmarkClass300Replicas(b *testing.B) {
	rs := replicas(b, 2, Config{Lessons: benchLessons})
	ra, rb := rs[0], rs[1]
	ctx := context.Background()
	sa, tok, err := ra.m.Create(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	sb, err := rb.m.Get(ctx, sa.Code())
	if err != nil {
		b.Fatal(err)
	}
	type arrival struct {
		pid int // the participant (0: the host or another screen)
		at  time.Time
	}
	const wait = 20 * time.Second
	var (
		mu        sync.Mutex
		projAt    = map[int]time.Time{} // seq → when the projector got that tally
		labels    = map[int]int{}       // seq → whose vote B's tally of that seq counts
		hostTally = make(chan arrival, benchClassSize*2)
		labelled  = make(chan struct{}, benchClassSize*2)
		projected = make(chan struct{}, benchClassSize*2)
		reveals   = make(chan arrival, benchClassSize*2)
		answers   = make(chan arrival, benchClassSize*2)
		opens     = make(chan int, benchClassSize*4)
		states    = make(chan int, benchClassSize*4)
		wg        sync.WaitGroup
	)
	reader := func(c *client, role string, pid int) {
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
				switch role {
				case "host":
					hostTally <- arrival{pid: o.Participant.ID, at: now}
				case "label":
					mu.Lock()
					labels[o.Seq] = o.Participant.ID
					mu.Unlock()
					labelled <- struct{}{}
				case "projector":
					mu.Lock()
					projAt[o.Seq] = now
					mu.Unlock()
					projected <- struct{}{}
				}
			case KindRevealed:
				reveals <- arrival{pid: pid, at: now}
			case KindAnswered:
				answers <- arrival{pid: pid, at: now}
			case KindRound:
				if o.Status == "open" {
					opens <- pid
				}
			case KindError:
				b.Errorf("%s %d: %s", role, pid, o.Message)
			}
		}
	}
	take := func(what string, n int, c <-chan struct{}) {
		for range n {
			select {
			case <-c:
			case <-time.After(wait):
				b.Fatalf("not every %s message came within %v", what, wait)
			}
		}
	}
	takeArrival := func(what string, c chan arrival) arrival {
		select {
		case a := <-c:
			return a
		case <-time.After(wait):
			b.Fatalf("no %s message within %v", what, wait)
			return arrival{}
		}
	}
	host := ra.host(sa.Code(), tok)
	label := rb.dial("host's second tab on B", sa.Code(), url.Values{"token": {tok}})
	proj := rb.dial("projector on B", sa.Code(), url.Values{"token": {sa.ProjectorToken()}})
	wg.Add(3)
	go reader(host, "host", 0)
	go reader(label, "label", 0)
	go reader(proj, "projector", 0)
	var ps []*client
	pids := make([]int, benchClassSize)
	for i := range benchClassSize {
		e, s := ra, sa
		if i%2 == 1 {
			e, s = rb, sb
		}
		id, ptok := mustJoin(b, s, "")
		pids[i] = id
		p := e.dial("p"+strconv.Itoa(id), s.Code(), url.Values{"p": {ptok}})
		ps = append(ps, p)
		wg.Add(1)
		go reader(p, "participant", id)
	}
	for range benchClassSize + 3 {
		select {
		case <-states:
		case <-time.After(wait):
			b.Fatal("not every client got its state in time")
		}
	}
	var projLat, hostLat, revealLat, answerLat []time.Duration
	sent := make([]time.Time, benchClassSize+1) // by participant id
	var sentMu sync.Mutex

	b.ResetTimer()
	for i := range b.N {
		if i >= 100 {
			b.Fatal("at most 100 iterations: one question each")
		}
		q := "q" + strconv.Itoa(i)
		host.send(In{Kind: KindOpen, Question: q})
		for range benchClassSize + 3 { // participants, host, label, projector
			select {
			case <-opens:
			case <-time.After(wait):
				b.Fatal("the round's opening did not reach everyone in time")
			}
		}
		var send sync.WaitGroup
		for j, p := range ps {
			send.Add(1)
			go func() {
				defer send.Done()
				sentMu.Lock()
				sent[pids[j]] = time.Now()
				sentMu.Unlock()
				p.ws.WriteJSON(In{Kind: KindVote, Question: q, Option: string(rune('a' + j%4))})
			}()
		}
		send.Wait()
		for range benchClassSize {
			a := takeArrival("host tally", hostTally)
			sentMu.Lock()
			hostLat = append(hostLat, a.at.Sub(sent[a.pid]))
			sentMu.Unlock()
		}
		take("labelling tally", benchClassSize, labelled)
		take("projector tally", benchClassSize, projected)
		mu.Lock()
		for seq, at := range projAt {
			pid, ok := labels[seq]
			if !ok {
				b.Fatalf("the projector's tally seq %d reached no host socket on B", seq)
			}
			projLat = append(projLat, at.Sub(sent[pid]))
		}
		clear(projAt)
		clear(labels)
		mu.Unlock()

		start := time.Now()
		host.send(In{Kind: KindReveal, Question: q})
		for range benchClassSize + 3 {
			if a := takeArrival("revealed", reveals); a.pid != 0 {
				revealLat = append(revealLat, a.at.Sub(start))
			}
		}
		start = time.Now()
		host.send(In{Kind: KindAnswer, Question: q})
		for range benchClassSize + 3 {
			if a := takeArrival("answer", answers); a.pid != 0 {
				answerLat = append(answerLat, a.at.Sub(start))
			}
		}
	}
	b.StopTimer()
	reportLatency(b, "vote-projector", projLat)
	reportLatency(b, "vote-host", hostLat)
	reportLatency(b, "reveal-all", revealLat)
	reportLatency(b, "answer-all", answerLat)
	for _, c := range append(ps, host, label, proj) {
		c.ws.Close()
	}
	wg.Wait()
}
