package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes lists every URL the site answers. Lesson actions answer HTML
// forms with a redirect to the block (303, post/redirect/get) and fetch
// calls that send "Accept: application/json" with JSON; both go through
// the same handler.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.forwarded, s.admission, s.observe, s.secure, s.sameOrigin, s.ltiSession, middleware.GetHead)

	r.Get("/", s.handle(s.index))
	r.Get("/healthz", s.healthz)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	r.Get("/static/*", s.handle(s.static))
	r.Get("/favicon.ico", s.favicon)

	r.Get("/lessons", s.handle(s.lessonsIndex))
	r.Get("/lessons/{slug}", s.handle(s.lesson))
	r.Post("/lessons/{slug}/predict/{id}", s.handle(s.predict))
	r.Post("/lessons/{slug}/check/{id}", s.handle(s.check))
	r.Post("/lessons/{slug}/record/{id}", s.handle(s.saveRecord))    // records.go
	r.Get("/lessons/{slug}/record/{id}", s.handle(s.recordMarkdown)) // {id}.md: the saved record as Markdown

	r.Post("/lessons/{slug}/model/{id}", s.handle(s.modelGoal))
	r.Get("/lessons/{slug}/lab/{id}/settings", s.handle(s.labSettings)) // lessonview.go

	r.Group(func(r chi.Router) {
		// Standalone widgets change nothing: other sites may frame them.
		r.Use(s.framable)
		r.Get("/widgets/{kind}", s.handle(s.widgetPage))
		r.Get("/widgets/{kind}/plot", s.handle(s.widgetPlot))
		r.Get("/widgets/{kind}/plot.svg", s.handle(s.widgetPlot))
	})
	r.Get("/api/models", s.handle(s.apiModels))
	r.Get("/api/models/{kind}", s.handle(s.apiModel))

	r.Get("/progress", s.handle(s.progressPage))
	r.Post("/progress/reset", s.handle(s.reset))

	r.Get("/api/lessons", s.handle(s.apiLessons))
	r.Get("/api/progress", s.handle(s.apiProgress))
	r.Post("/api/progress/reset", s.handle(s.reset))

	// Live sweeps and saved runs (sweeps.go, runpages.go, runpanel.go, runcsv.go, compare.go, stream.go).
	r.Post("/api/sweeps", s.handle(s.submitSweep))
	r.Post("/api/simulate", s.handle(s.simulateSweep)) // simulate.go: the same request, simulated in process
	r.Get("/api/runs/{id}", s.handle(s.apiRun))
	r.Post("/api/runs/{id}/cancel", s.handle(s.cancelRun))
	r.Get("/runs", s.handle(s.runsPage))
	r.Get("/runs/compare", s.handle(s.compareRuns))
	r.Get("/runs/{id}", s.handle(s.runPage)) // also /runs/{id}.csv
	r.Get("/runs/{id}/chart.svg", s.handle(s.runChartSVG))
	r.Get("/runs/{id}/panel", s.handle(s.runPanelFragment))
	r.Get("/runs/{id}/records.csv", s.handle(s.recordsCSV))
	r.Get("/runs/{id}/samples.csv", s.handle(s.samplesCSV))
	r.Get("/runs/{id}/report.html", s.handle(s.uploadReport)) // service.go: an upload's self-contained report
	r.Post("/runs/{id}/cancel", s.handle(s.cancelRun))
	r.Get("/ws/runs/{id}", s.handle(s.streamRun))

	// Your service: learners' own results files (service.go).
	r.Get("/service", s.handle(s.servicePage))
	r.Post("/service", s.handle(s.uploadService))
	r.Post("/service/example", s.handle(s.uploadExample))
	r.Post("/service/{id}/delete", s.handle(s.deleteUpload))
	r.Get("/api/labs/{block}/reference", s.handle(s.labReferenceRun))

	// Class sessions (sessions.go; protocol in package classroom).
	r.Get("/teach", s.handle(s.teachPage))
	r.Post("/teach/forget", s.handle(s.forgetTeachPass))
	r.Post("/sessions", s.handle(s.createSession))
	r.Post("/api/sessions", s.handle(s.createSession))
	r.Get("/join", s.handle(s.joinPage))
	r.Post("/join", s.handle(s.join))
	r.Get("/join/{code}", s.handle(s.joinCode))
	r.Get("/sessions/{code}", s.handle(s.sessionPage))
	r.Get("/sessions/{code}/host", s.handle(s.hostPage))
	r.Get("/sessions/{code}/projector", s.handle(s.projectorPage))
	r.Get("/sessions/{code}/qr.svg", s.handle(s.sessionQR))
	r.Get("/sessions/{code}/parts", s.handle(s.sessionParts))
	r.Get("/sessions/{code}/{file:results|answers}.csv", s.handle(s.sessionCSV))
	r.Get("/sessions/{code}/recorded/{lab}", s.handle(s.sessionRecorded))
	r.Get("/ws/sessions/{code}", s.handle(s.sessionStream))

	// LTI 1.3: launches from learning platforms, deep linking, grades
	// (lti.go; protocol in package lti).
	r.Get("/lti", s.handle(s.ltiConfig))
	r.Get("/lti/jwks.json", s.handle(s.ltiJWKS))
	r.Get("/lti/login", s.handle(s.ltiLogin))
	r.Post("/lti/login", s.handle(s.ltiLogin))
	r.Post("/lti/launch", s.handle(s.ltiLaunch))
	r.Post("/lti/deep-link", s.handle(s.ltiDeepLink))
	r.Get("/lti/grades", s.handle(s.ltiGrades))
	r.Post("/lti/grades/retry", s.handle(s.ltiRetry))

	r.NotFound(s.handle(s.notFound))
	r.MethodNotAllowed(s.handle(s.methodNotAllowed))
	return r
}
