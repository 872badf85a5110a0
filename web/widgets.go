package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"capacitylab/chart"
	"capacitylab/input"
	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/store"
)

// paramErrorsError turns parameter problems into the one error type, with
// every problem in Fields and in the message.
func paramErrorsError(errs input.FieldErrors) *Error {
	msgs := make([]string, 0, len(errs))
	for _, name := range errs.Names() {
		msgs = append(msgs, name+": "+errs[name])
	}
	return &Error{Code: CodeInvalid, Message: "Some values are not allowed. " + strings.Join(msgs, ". ") + ".", Fields: errs}
}

// widgetCtxKey keys the widget state of a lesson page request.
type widgetCtxKey struct{}

// widgetCtx is what a lesson page's model blocks need from the request:
// the values the no-JavaScript form sent for one block, if any.
type widgetCtx struct {
	Models *modelCache // the server's memo of widget results
	Block  string      // "" when the form sent nothing
	Query  widgetQuery
	Errors input.FieldErrors
}

// lessonWidgets reads a lesson page's widget form (GET ?widget=ID&…, see
// the package doc) into the request context for the model blocks to
// render. When the values reach the block's goal and the request comes
// from this site's own page (Sec-Fetch-Site same-origin, or absent in
// clients that do not send it), the goal is recorded in the learner's
// progress, as the JavaScript path does with POST; a new learner gets a
// cookie, and the returned request carries it so the page shows it.
func (s *server) lessonWidgets(w http.ResponseWriter, r *http.Request, l *lessons.Lesson) (*http.Request, error) {
	wc := &widgetCtx{Models: s.models}
	r = r.WithContext(context.WithValue(r.Context(), widgetCtxKey{}, wc))
	q := r.URL.Query()
	id := q.Get("widget")
	if id == "" {
		return r, nil
	}
	b, ok := l.Block(id)
	m, isModel := b.(*lessons.Model)
	if !ok || !isModel {
		return r, nil // a stale link to a block that is gone: show the lesson as it is
	}
	wq, errs := parseWidgetQuery(m.Widget, q, false)
	wc.Block, wc.Query, wc.Errors = id, wq, errs
	if len(errs) > 0 || len(m.Goal.Want) == 0 {
		return r, nil
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return r, nil
	}
	v, err := lessonWidgetView(r.Context(), l, m, store.LessonState{})
	if err != nil {
		return nil, err
	}
	if !v.Status.Reached {
		return r, nil
	}
	fresh := learnerID(r) == ""
	learner := ensureLearner(w, r)
	if _, err := s.store.RecordGoal(r.Context(), learner, l.Slug, m.ID, paramValues(v)); err != nil {
		return nil, err
	}
	s.progressChanged(r, learner, l.Slug)
	if fresh {
		r = r.Clone(r.Context())
		r.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
	}
	return r, nil
}

// widgetKind returns the spec of the URL's {kind} or a not-found error.
func widgetKind(r *http.Request) (model.Spec, error) {
	kind := chi.URLParam(r, "kind")
	spec, ok := model.Specs()[kind]
	if !ok {
		return model.Spec{}, errorf(CodeNotFound, fmt.Sprintf("There is no widget called %q: want one of %s.", kind, strings.Join(model.Kinds(), ", ")))
	}
	return spec, nil
}

// widgetPage serves GET /widgets/{kind}: one widget on a page of its own,
// with no site chrome, for an iframe or a shared preset link.
func (s *server) widgetPage(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	// A bad value is shown inside the widget, beside its field, with the
	// rest computed from what was good: a page that frames the widget
	// keeps a widget, not an error page of this site.
	wq, errs := parseWidgetQuery(spec.Kind, r.URL.Query(), true)
	values := wq.Values
	if wq.Nudge.Dir != 0 && len(errs) == 0 {
		nudged(spec, values, wq.Nudge, wq.Goal)
	}
	v, err := buildWidget(s.models, "w-"+spec.Kind, spec, values, wq.Solve, errs)
	if err != nil {
		return err
	}
	v.withGoal(wq.GoalText, wq.Found, wq.Goal)
	v.Assumes, v.Ignores = wq.Assumes, wq.Ignores
	if len(v.Assumes) == 0 && len(v.Ignores) == 0 {
		v.Assumes, v.Ignores = defaultCaveats(spec.Kind)
	}
	v.Standalone = true
	v.Assets = s.widgetAssets()
	v.Action = "/widgets/" + spec.Kind
	for _, kv := range [][2]string{{"goal_text", wq.GoalText}, {"found", wq.Found}, {"title", wq.Title}} {
		if kv[1] != "" {
			v.Hidden = append(v.Hidden, kv)
		}
	}
	if len(wq.Goal) > 0 {
		v.Hidden = append(v.Hidden, [2]string{"goal", goalParam(wq.Goal)})
	}
	for _, a := range wq.Assumes {
		v.Hidden = append(v.Hidden, [2]string{"assumes", a})
	}
	for _, a := range wq.Ignores {
		v.Hidden = append(v.Hidden, [2]string{"ignores", a})
	}
	v.ShareURL = presetURL(spec.Kind, paramValues(v), v.Solve, wq.GoalText, wq.Found, wq.Goal, wq.Assumes, wq.Ignores)
	title := wq.Title
	if title == "" {
		title = spec.Title
	}
	v.Title = title
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, widgetStandalone(s.widgetAssets(), title, v))
	return nil
}

// plotKinds are the widget kinds with a plot (widgetPlotChart).
func plotKinds() []string {
	return []string{model.KindTwoCeilings, model.KindQueueCurve, model.KindQuota, model.KindAIMD, model.KindRetry, model.KindLateScaling,
		model.KindVariability, model.KindFanout, model.KindUSL}
}

func (s *server) widgetAssets() widgetAssetURLs {
	return widgetAssetURLs{AppCSS: s.assets.URL("css/app.css"), WidgetCSS: s.assets.URL("css/widgets.css"), WidgetJS: s.assets.URL("js/widgets.js")}
}

// widgetPlot serves GET /widgets/{kind}/plot, the kind's plot for the
// query's values as the HTML the widget shows (widgets.js swaps it in as
// the controls move), and GET /widgets/{kind}/plot.svg, the same plot as
// an SVG image of its own. id= is the widget's element id, which prefixes
// the plot's own ids (letters, digits and hyphens); solve= is the widget's
// (the quota's implied quantity).
func (s *server) widgetPlot(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	if !slices.Contains(plotKinds(), spec.Kind) {
		return errorf(CodeNotFound, spec.Title+" has no plot: plots are drawn for "+strings.Join(plotKinds(), ", ")+".")
	}
	q := r.URL.Query()
	wq, errs := parseWidgetQuery(spec.Kind, q, false)
	id := q.Get("id")
	if id == "" {
		id = "w-" + spec.Kind
	}
	if !validElementID(id) {
		errs["id"] = "want 1 to 64 letters, digits and hyphens"
	}
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	v, err := buildWidget(s.models, id, spec, wq.Values, wq.Solve, nil)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	if strings.HasSuffix(r.URL.Path, ".svg") {
		c, _ := widgetPlotChart(v.Result, id)
		w.Header().Set("Content-Type", "image/svg+xml")
		return chart.SVG(c).Render(r.Context(), w)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write([]byte(v.PlotHTML))
	return err
}

func validElementID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// apiModelResponse is GET /api/models/{kind}: Compute's Result, and the
// goal's status when the query has goal=.
type apiModelResponse struct {
	model.Result
	Goal *model.GoalStatus `json:"goal,omitempty"`
}

// apiModel serves GET /api/models/{kind}?param=value&…[&solve=][&goal=].
func (s *server) apiModel(w http.ResponseWriter, r *http.Request) error {
	spec, err := widgetKind(r)
	if err != nil {
		return err
	}
	wq, errs := parseWidgetQuery(spec.Kind, r.URL.Query(), false)
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	res, err := s.models.compute(spec.Kind, wq.Values, wq.Solve)
	if err != nil {
		return err
	}
	out := apiModelResponse{Result: res}
	if len(wq.Goal) > 0 {
		st := model.GoalReached(res.Quantities, wq.Goal)
		out.Goal = &st
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// apiModels serves GET /api/models: every widget kind's spec.
func (s *server) apiModels(w http.ResponseWriter, r *http.Request) error {
	specs := model.Specs()
	out := struct {
		Models []model.Spec `json:"models"`
	}{}
	for _, k := range model.Kinds() {
		out.Models = append(out.Models, specs[k])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// goalResponse is the JSON answer to POST /lessons/{slug}/model/{id}.
type goalResponse struct {
	Block   string     `json:"block"`
	Reached bool       `json:"reached"`
	Goal    store.Goal `json:"goal"`
}

// modelGoal handles POST /lessons/{slug}/model/{id}: widgets.js sends the
// widget's values (and solve) when they reach the block's goal. The server
// computes the model again and records the goal only if it holds; a form
// post is redirected back to the block.
func (s *server) modelGoal(w http.ResponseWriter, r *http.Request) error {
	c, err := s.loadCourse()
	if err != nil {
		return err
	}
	slug, id := chi.URLParam(r, "slug"), chi.URLParam(r, "id")
	i := findLesson(c, slug)
	if i < 0 {
		return errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q.", slug))
	}
	l := c.Lessons[i]
	b, _ := l.Block(id)
	m, ok := b.(*lessons.Model)
	if !ok {
		return errorf(CodeNotFound, fmt.Sprintf("Lesson %q has no model block called %q.", slug, id))
	}
	if len(m.Goal.Want) == 0 {
		return errorf(CodeConflict, fmt.Sprintf("Model block %q has no goal to reach.", id))
	}
	// A quantity comes twice, from its slider and its number box.
	if err := parseForm(r, model.QuantityNames(m.Widget)...); err != nil {
		return err
	}
	wq, errs := parseWidgetQuery(m.Widget, r.PostForm, false)
	if len(errs) > 0 {
		return paramErrorsError(errs)
	}
	solve := m.Solve
	if wq.Solve != "" {
		solve = wq.Solve
	}
	values := map[string]float64{}
	for k, x := range m.Values {
		values[k] = x
	}
	for k, x := range wq.Values {
		values[k] = x
	}
	v, err := buildWidget(s.models, m.ID, specOf(m), values, solve, nil)
	if err != nil {
		return err
	}
	v.withGoal(m.Goal.Text, m.Goal.Found, lessonTargets(m.Goal.Want))
	if !v.Status.Reached {
		return errorf(CodeConflict, "The goal is not reached at these values yet. "+strings.Join(v.MissTexts(), " "))
	}
	learner := ensureLearner(w, r)
	g, err := s.store.RecordGoal(r.Context(), learner, l.Slug, m.ID, paramValues(v))
	if err != nil {
		return err
	}
	s.progressChanged(r, learner, l.Slug)
	if !wantsJSON(r) {
		http.Redirect(w, r, lessonURL(l.Slug)+"#"+m.ID, http.StatusSeeOther)
		return nil
	}
	writeJSON(w, http.StatusOK, goalResponse{Block: m.ID, Reached: true, Goal: g})
	return nil
}
