package classroom

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"capacitylab/store"
)

// logBuffer collects a logger's output across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every message that tells a host or a participant "it has been logged"
// is true: the error it stands for is in the log, with the session, by
// the time the message is sent, and its text is not shown to them. The
// store's writes fail here as on a full disk (store.FullWhen); the class
// run fails as a RunFunc does when the runner's store fails.
func TestInternalErrorsAreLogged(t *testing.T) {
	logs := &logBuffer{}
	var full atomic.Bool
	e := &env{t: t, path: filepath.Join(t.TempDir(), "class.db"), opts: []store.Option{store.FullWhen(full.Load)}}
	e.start(Config{Logger: slog.New(slog.NewTextHandler(logs, nil)),
		StartRun: func(ctx context.Context, session, lesson, lab, addr string, k *Knobs) (string, error) {
			return "", errors.New("queueing the class run: the run queue's store is locked")
		}})
	t.Cleanup(e.stop)
	ctx := context.Background()
	s, token, err := e.m.Create(ctx, "queues")
	if err != nil {
		t.Fatal(err)
	}
	_, ptoken, err := s.Join(ctx, "Ada")
	if err != nil {
		t.Fatal(err)
	}
	host := e.host(s.Code(), token)
	host.expect(KindState)
	ada := e.participant("Ada", s.Code(), ptoken)
	ada.expect(KindState)
	host.send(In{Kind: KindOpen, Question: "p1"})
	host.expect(KindRound, KindPresence)

	check := func(name string, got Out, msg string, logged ...string) {
		t.Helper()
		if got.Code != ErrCodeInternal || got.Message != msg {
			t.Errorf("%s: reply %+v, want %s %q", name, got, ErrCodeInternal, msg)
		}
		for _, want := range append(logged, "session="+s.Code()) {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("%s: the log lacks %q:\n%s", name, want, logs.String())
			}
		}
		if strings.Contains(got.Message, "store") || strings.Contains(got.Message, "disk") {
			t.Errorf("%s: the reply shows the error itself: %q", name, got.Message)
		}
	}
	// A class run the runner could not queue for a reason of its own.
	host.send(In{Kind: KindRun, Lab: "lab-1"})
	check("run", host.expect(KindError, KindPresence), "Something went wrong on the server; it has been logged. Try again.",
		"class session message failed", "the run queue's store is locked")

	full.Store(true) // the disk fills
	// A vote that cannot be stored.
	ada.send(In{Kind: KindVote, Question: "p1", Option: "a", Ref: 3})
	check("vote", ada.expect(KindError, KindRound), "Your vote could not be saved; it has been logged. Try again.",
		"storing a class vote", "database or disk is full")
	// A host's step that cannot be stored.
	host.send(In{Kind: KindClose, Question: "p1"})
	check("close", host.expect(KindError, KindPresence, KindTally), "Something went wrong on the server; it has been logged. Try again.",
		"kind=close", "database or disk is full")
	full.Store(false)
}
