package web

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"capacitylab/chart"
	"capacitylab/model"
)

// modelCacheSize bounds the widget results the server keeps. A lesson page
// shows a few model blocks, each with the block's own values until a
// learner moves its controls, so the entries that matter are few; values
// sent by learners' forms and /api/models fill the rest.
const modelCacheSize = 1024

// widgetResult is model.Compute's answer for one (kind, solve, values)
// and the kind's plot drawn from it, kept by modelCache.
type widgetResult struct {
	res  model.Result
	plot map[string]string // element id → the plot's HTML, filled by plotHTML
}

// modelCache memoises model.Compute (and the widget plots drawn from its
// Result) per kind, solve and values: the queue curve takes about a
// millisecond, and every learner's lesson page shows each block's initial
// widget. A Result in the cache is shared by every request that asks for
// the same values, so callers must not change its maps. When full, one
// entry (whichever the map yields first) makes room. Errors are not kept.
// A nil *modelCache computes every time. The zero value is ready to use.
type modelCache struct {
	mu sync.Mutex
	m  map[string]*widgetResult
}

// modelKey is kind, solve and every value as name=value in name order,
// with each number printed exactly (strconv 'g', -1), so two keys are equal
// exactly when Compute's inputs are.
func modelKey(kind string, values map[string]float64, solve string) string {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteByte('|')
	b.WriteString(solve)
	for _, k := range slices.Sorted(maps.Keys(values)) {
		b.WriteByte('|')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(values[k], 'g', -1, 64))
	}
	return b.String()
}

// compute returns model.Compute(kind, values, solve), from the cache when
// it has the same inputs.
func (c *modelCache) compute(kind string, values map[string]float64, solve string) (model.Result, error) {
	e, err := c.entry(kind, values, solve)
	if err != nil {
		return model.Result{}, err
	}
	return e.res, nil
}

// entry finds or computes the cache entry for the inputs.
func (c *modelCache) entry(kind string, values map[string]float64, solve string) (*widgetResult, error) {
	if c == nil {
		res, err := model.Compute(kind, values, solve)
		if err != nil {
			return nil, err
		}
		return &widgetResult{res: res}, nil
	}
	key := modelKey(kind, values, solve)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return e, nil
	}
	res, err := model.Compute(kind, values, solve) // outside the lock: a miss costs up to a millisecond
	if err != nil {
		return nil, err
	}
	e = &widgetResult{res: res, plot: map[string]string{}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok { // another request computed it meanwhile
		return old, nil
	}
	if c.m == nil {
		c.m = make(map[string]*widgetResult)
	}
	if len(c.m) >= modelCacheSize {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
	return e, nil
}

// plotHTML returns the plot of e's result for the element id, rendered
// once per id (widgetPlotChart, as chart.Figure).
func (c *modelCache) plotHTML(e *widgetResult, id string) string {
	draw := func() string {
		ch, _ := widgetPlotChart(e.res, id)
		html, err := renderString(context.Background(), chart.Figure(ch))
		if err != nil {
			return "" // templ writes into memory here: only a bug gets this far
		}
		return html
	}
	if c == nil || e.plot == nil {
		return draw()
	}
	c.mu.Lock()
	html, ok := e.plot[id]
	c.mu.Unlock()
	if ok {
		return html
	}
	html = draw()
	c.mu.Lock()
	if len(e.plot) < 16 { // ids are the lesson's block ids: a few per result
		e.plot[id] = html
	}
	c.mu.Unlock()
	return html
}

// len returns how many results the cache holds.
func (c *modelCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
