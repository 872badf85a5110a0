package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"capacitylab/result"
)

// Control talks to the lab's control API (GET /stats, POST /reset,
// GET /config, POST /config). Build one with NewControl.
//
// A Control may speak for several labs, the ones a sweep splits its
// fanned-out sub-requests across (Sweep.Split; NewControl given their
// URLs joined by commas): Stats reads every lab and merges what they say
// (result.MergeLabStats), Reset resets each, and Drain waits for all of
// them; Config, Set and the knob changes a sweep makes are the first
// lab's (Sweep.Validate refuses knob changes with several labs).
//
// Every call rides out a lab that answers slowly or drops a connection:
// each attempt may take controlAttempt, and a call that got no answer
// (a timeout, a connection reset or closed before the reply, a 5xx) is
// tried again after controlBackoff, doubling, up to controlAttempts times
// within ControlBudget. Every control call is safe to repeat: reads, a
// reset of counters that are zero until the window starts, and knob
// changes that set a value. A refusal (4xx) is an answer and is not
// tried again, nor is a connection refused (nothing listens: the lab is
// gone).
type Control struct {
	base string
	hc   *http.Client
	also []Control // the other labs' control APIs, in the order given
}

// How long control calls wait. A lab on a busy machine answers its
// control API in seconds, not milliseconds: its processor is shared with
// the machine's other work (the server's own process runs on the lab's
// processor, which keeps the other one for the load generator), and the
// control API waits its turn. A run of bottleneck-moves' 64-worker
// preset through the server, load average 14 to 20 from other work on the
// machine, read its lab child's GET /stats in 0.05 s (median) and 1.3 s at
// the longest with nothing else busy, and in 2.1 s (median), 4.4 s (p90)
// and 10.8 s at the longest beside three busy loops (bench/busy-control.sh,
// docs/BENCHMARKS.md). One attempt of 5 s and no second one ended such
// runs as "could not reach the lab's control".
const (
	controlAttempt  = 12 * time.Second       // one attempt: past the longest answer measured
	controlAttempts = 3                      // attempts of a call, at most
	controlBackoff  = 250 * time.Millisecond // the wait before the second attempt, doubling after
)

// ControlBudget is the longest a control call waits, all its attempts
// and the waits between them (package measure counts it in how long a
// load child may say nothing between windows).
const ControlBudget = 25 * time.Second

// NewControl returns a Control for the API at rawURL (http://host:port),
// or for several labs' given as their URLs joined by commas (at most
// MaxSplit). hc may be nil, in which case a client of its own is used,
// with no keep-alive (control calls are few, and no idle connection
// outlives a sweep); its attempts are timed by the call (controlAttempt).
func NewControl(rawURL string, hc *http.Client) (Control, error) {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	urls := strings.Split(rawURL, ",")
	if len(urls) > MaxSplit {
		return Control{}, fmt.Errorf("control lists %d labs: want at most %d", len(urls), MaxSplit)
	}
	var labs []Control
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return Control{}, fmt.Errorf("control %q is not allowed: want http://host:port (or several, joined by commas)", raw)
		}
		labs = append(labs, Control{base: strings.TrimRight(u.String(), "/"), hc: hc})
	}
	c := labs[0]
	c.also = labs[1:]
	return c, nil
}

// URL is the control API's base URL; for several labs, their URLs
// joined by commas.
func (c Control) URL() string {
	u := c.base
	for _, o := range c.also {
		u += "," + o.base
	}
	return u
}

// Labs is how many labs the Control speaks for.
func (c Control) Labs() int { return 1 + len(c.also) }

// Stats reads GET /stats, of every lab, merged.
func (c Control) Stats(ctx context.Context) (result.LabStats, error) {
	s := result.LabStats{BackloggedMax: -1}
	if err := c.call(ctx, http.MethodGet, "/stats", &s); err != nil || len(c.also) == 0 {
		return s, err
	}
	all := []result.LabStats{s}
	for _, o := range c.also {
		s, err := o.Stats(ctx)
		if err != nil {
			return s, err
		}
		all = append(all, s)
	}
	return result.MergeLabStats(all...), nil
}

// Reset calls POST /reset, zeroing each lab's window counters.
func (c Control) Reset(ctx context.Context) error {
	if err := c.call(ctx, http.MethodPost, "/reset", nil); err != nil {
		return err
	}
	for _, o := range c.also {
		if err := o.Reset(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Config decodes GET /config into v: the first lab's.
func (c Control) Config(ctx context.Context, v any) error {
	return c.call(ctx, http.MethodGet, "/config", v)
}

// Set makes a knob change now (POST /config with the one knob) at the
// first lab, as a sweep does at the change's time. The lab's refusal is returned with
// its reason.
func (c Control) Set(ctx context.Context, k result.KnobChange) error {
	body, err := changeBody(k)
	if err != nil {
		return err
	}
	return c.post(ctx, "/config", body)
}

// knobValues reads the current values of the knobs changes name (GET
// /config), as JSON bodies of POST /config that would set them back.
func (c Control) knobValues(ctx context.Context, changes []result.KnobChange) ([][]byte, error) {
	var cfg map[string]json.RawMessage
	if err := c.Config(ctx, &cfg); err != nil {
		return nil, err
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, k := range changes {
		name := strings.ToLower(k.Knob)
		if seen[name] {
			continue
		}
		seen[name] = true
		v, ok := cfg[name]
		if !ok {
			return nil, fmt.Errorf("lab control GET /config: the lab has no knob %s to change", k.Knob)
		}
		b, err := json.Marshal(map[string]json.RawMessage{name: v})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// restore sets knobs back to values knobValues read.
func (c Control) restore(ctx context.Context, bodies [][]byte) error {
	for _, b := range bodies {
		if err := c.post(ctx, "/config", b); err != nil {
			return err
		}
	}
	return nil
}

func (c Control) post(ctx context.Context, path string, body []byte) error {
	return c.do(ctx, http.MethodPost, path, body, nil)
}

func (c Control) call(ctx context.Context, method, path string, v any) error {
	return c.do(ctx, method, path, nil, v)
}

// do makes one control call, trying again as the Control doc says, and
// decodes a JSON answer into v (nil: the answer is not read).
func (c Control) do(ctx context.Context, method, path string, body []byte, v any) error {
	what := "lab control " + method + " " + path
	if body != nil {
		what += " " + string(body)
	}
	ctx, cancel := context.WithTimeout(ctx, ControlBudget)
	defer cancel()
	wait := controlBackoff
	for attempt := 1; ; attempt++ {
		reply, err := c.attempt(ctx, method, path, body)
		var answered *controlAnswer
		switch {
		case err == nil:
			if v == nil {
				return nil
			}
			if err := json.Unmarshal(reply, v); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		case errors.As(err, &answered) && answered.status < 500:
			return fmt.Errorf("%s: %w", what, err)
		case errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("%s: %w", what, err)
		}
		if attempt == controlAttempts || ctx.Err() != nil {
			if attempt > 1 {
				return fmt.Errorf("%s: no answer in %d tries: %w", what, attempt, err)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: no answer in %d tries: %w", what, attempt, err)
		}
		wait *= 2
	}
}

// controlAnswer is a control call the lab answered with a status other
// than 2xx, with the reason its JSON body gave, if any.
type controlAnswer struct {
	status int
	reason string
}

func (e *controlAnswer) Error() string {
	if e.reason != "" {
		return fmt.Sprintf("status %d: %s", e.status, e.reason)
	}
	return fmt.Sprintf("status %d", e.status)
}

// attempt makes one try of a control call, of at most controlAttempt,
// and returns the answer's body (at most 1 MiB).
func (c Control) attempt(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, controlAttempt)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // the lab takes changes only as JSON
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(reply, &e)
		return nil, &controlAnswer{status: resp.StatusCode, reason: e.Error}
	}
	return reply, nil
}

// Drain polls Stats until nothing is queued or in service, or until wait has
// passed. It reports whether the lab drained and the last stats read.
func (c Control) Drain(ctx context.Context, wait time.Duration) (bool, result.LabStats, error) {
	deadline := time.Now().Add(wait)
	for {
		s, err := c.Stats(ctx)
		if err != nil {
			return false, s, err
		}
		if s.Queued+s.InService == 0 {
			return true, s, nil
		}
		if time.Now().After(deadline) {
			return false, s, nil
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, s, ctx.Err()
		case <-t.C:
		}
	}
}
