package loadrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"capacitylab/result"
)

// Control talks to the lab's control API (GET /stats, POST /reset,
// GET /config, POST /config). Build one with NewControl.
type Control struct {
	base string
	hc   *http.Client
}

// NewControl returns a Control for the API at rawURL (http://host:port).
// hc may be nil, in which case a client of its own is used: 5 s timeout, no
// keep-alive (control calls are few, and no idle connection outlives a
// sweep).
func NewControl(rawURL string, hc *http.Client) (Control, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return Control{}, fmt.Errorf("control %q is not allowed: want http://host:port", rawURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	}
	return Control{base: strings.TrimRight(u.String(), "/"), hc: hc}, nil
}

// URL is the control API's base URL.
func (c Control) URL() string { return c.base }

// Stats reads GET /stats.
func (c Control) Stats(ctx context.Context) (result.LabStats, error) {
	s := result.LabStats{BackloggedMax: -1}
	err := c.call(ctx, http.MethodGet, "/stats", &s)
	return s, err
}

// Reset calls POST /reset, zeroing the lab's window counters.
func (c Control) Reset(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/reset", nil)
}

// Config decodes GET /config into v.
func (c Control) Config(ctx context.Context, v any) error {
	return c.call(ctx, http.MethodGet, "/config", v)
}

// Set makes a knob change now (POST /config with the one knob), as a
// sweep does at the change's time. The lab's refusal is returned with
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("lab control POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(reply, &e) == nil && e.Error != "" {
			return fmt.Errorf("lab control POST %s %s: status %d: %s", path, body, resp.StatusCode, e.Error)
		}
		return fmt.Errorf("lab control POST %s %s: status %d", path, body, resp.StatusCode)
	}
	return nil
}

func (c Control) call(ctx context.Context, method, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // the lab takes changes only as JSON
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("lab control %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("lab control %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("lab control %s %s: status %d", method, path, resp.StatusCode)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("lab control %s %s: %w", method, path, err)
	}
	return nil
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
