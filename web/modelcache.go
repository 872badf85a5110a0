package web

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"capacitylab/chart"
	"capacitylab/model"
)

// modelCacheSize bounds the widget results the server keeps. A lesson page
// shows a few model blocks, each with the block's own values until a
// learner moves its controls, so the entries that matter are few; values
// sent by learners' forms and /api/models fill the rest.
const modelCacheSize = 1024

// widgetResult is model.Compute's answer for one (kind, solve, values),
// kept by modelCache under key (modelKey).
type widgetResult struct {
	res model.Result
	key string
}

// modelCache memoises model.Compute (and the widget plots drawn from its
// Result) per kind, solve and values: the queue curve takes about a
// millisecond, and every learner's lesson page shows each block's initial
// widget. A Result in the cache is shared by every request that asks for
// the same values, so callers must not change its maps. Errors are not
// kept. A nil *modelCache computes every time. Make it with newModelCache.
type modelCache struct {
	results *cache[*widgetResult]
	plots   *cache[string] // a result's plot by modelKey and element id
}

// plotCacheSize bounds the plots kept: a few element ids (the lessons'
// block ids) per result.
const plotCacheSize = 4 * modelCacheSize

func newModelCache() *modelCache {
	return &modelCache{results: newCache[*widgetResult](modelCacheSize), plots: newCache[string](plotCacheSize)}
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
	key := modelKey(kind, values, solve)
	var results *cache[*widgetResult]
	if c != nil {
		results = c.results
	}
	return results.getOrMake(key, func() (*widgetResult, bool, error) {
		res, err := model.Compute(kind, values, solve)
		if err != nil {
			return nil, false, err
		}
		return &widgetResult{res: res, key: key}, true, nil
	})
}

// plotHTML returns the plot of e's result for the element id, rendered
// once per result and id (widgetPlotChart, as chart.Figure).
func (c *modelCache) plotHTML(e *widgetResult, id string) string {
	var plots *cache[string]
	if c != nil {
		plots = c.plots
	}
	html, _ := plots.getOrMake(e.key+"|#"+id, func() (string, bool, error) {
		ch, _ := widgetPlotChart(e.res, id)
		html, err := renderString(context.Background(), chart.Figure(ch))
		if err != nil {
			return "", false, nil // templ writes into memory here: only a bug gets this far
		}
		return html, true, nil
	})
	return html
}

// len returns how many results the cache holds.
func (c *modelCache) len() int {
	if c == nil {
		return 0
	}
	return c.results.len()
}
