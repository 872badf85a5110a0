package web

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"capacitylab/chart"
	"capacitylab/evidence"
	"capacitylab/input"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// The "Your service" page (GET and POST /service): a learner uploads the
// results of a load test of their own service, made on their own machine
// by cmd/load, vegeta or k6, and the server reads it (package evidence),
// analyses it by the course's method and stores it as a run of theirs
// (store.SaveUpload), private to them. The server sends no load anywhere
// but to its own lab children: load against a learner's system comes
// only from their own load generator.

const (
	// uploadIDPrefix starts every upload's run id (lab runs' ids are 16
	// hex digits), so a handler that serves a run from what it keeps for
	// everyone (the run panel) knows to check its owner first.
	uploadIDPrefix = "u"
	// maxReportBytes caps load's report data (NAME.json) sent beside the
	// records.
	maxReportBytes = 4 << 20
	// maxBudgetMS is the longest latency budget taken: an hour.
	maxBudgetMS = 3_600_000
	// uploadMemory is how much of a multipart upload is held in memory;
	// the rest of the file waits in a temporary file until it is read.
	uploadMemory = 8 << 20
	// uploadTime is how long an upload's body may take to arrive, and an
	// upload's records or report to be sent, past the server's own
	// timeouts (cmd/server: 15 s to read a request, 30 s to write an
	// answer): 100 MiB over a link of 10 Mbit/s takes 84 s.
	uploadTime = 5 * time.Minute
)

// allowUploadTime lets this request's body arrive and its answer go for
// uploadTime from now. A server without deadlines is left as it is.
func allowUploadTime(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(uploadTime))
	rc.SetWriteDeadline(time.Now().Add(uploadTime))
}

func isUploadID(id string) bool { return strings.HasPrefix(id, uploadIDPrefix) }

// newUploadID is a new upload's run id: "u" and 16 hex digits.
func newUploadID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return uploadIDPrefix + hex.EncodeToString(b[:]), nil
}

// uploadBodyLimit is the most POST /service may send: the results file at
// its limit, the report data at its, and the form around them.
func (s *server) uploadBodyLimit() int64 {
	return s.uploadLimits.MaxBytes + maxReportBytes + MaxBodyBytes
}

// bodyLimit is the cap on r's body: uploads' (uploadBodyLimit) for POST
// /service, MaxBodyBytes for everything else.
func (s *server) bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodPost && r.URL.Path == "/service" {
		return s.uploadBodyLimit()
	}
	return MaxBodyBytes
}

// serviceView is the "Your service" page: the learner's uploads, and the
// form again with what was wrong with the last one sent.
type serviceView struct {
	Uploads    []uploadItem
	Error      string // why the upload just sent was refused, "" for none
	Budget     string // the budget field as sent
	MaxFile    string // the results file's limits in words
	MaxRecords string
	Deleted    bool
}

// uploadItem is one of the learner's uploads, listed with a link and a
// delete button.
type uploadItem struct {
	ID, Title, Knee string
	Created         time.Time
}

// servicePage is GET /service.
func (s *server) servicePage(w http.ResponseWriter, r *http.Request) error {
	return s.renderService(w, r, http.StatusOK, serviceView{Deleted: r.URL.Query().Get("deleted") != ""})
}

// renderService renders the page with v's error and budget and the
// learner's uploads.
func (s *server) renderService(w http.ResponseWriter, r *http.Request, status int, v serviceView) error {
	if learner := learnerID(r); learner != "" {
		runs, err := s.store.Uploads(r.Context(), learner)
		if err != nil {
			return err
		}
		for _, sr := range runs {
			var q runner.Request
			json.Unmarshal(sr.Request, &q)
			if q.Upload == nil {
				continue
			}
			v.Uploads = append(v.Uploads, uploadItem{ID: sr.ID, Title: uploadName(q) + " — " + presetWords(q), Knee: kneeWords(q.Upload.Analysis), Created: sr.CreatedAt})
		}
	}
	v.MaxFile = byteSize(s.uploadLimits.MaxBytes)
	v.MaxRecords = thousands(s.uploadLimits.MaxRecords)
	s.render(w, r, status, servicePageView(s.page(r, "Your service"), v))
	return nil
}

// uploadService is POST /service: the results file (field "results",
// required), load's report data ("report", optional) and a latency budget
// in ms ("budget_ms", optional). Stored, it answers 303 to the upload's
// run page (JSON: 201 {id, url}); refused, the page again with the form
// and what was wrong (JSON: the error), and nothing stored.
func (s *server) uploadService(w http.ResponseWriter, r *http.Request) error {
	allowUploadTime(w)
	id, err := s.storeUpload(w, r)
	if err != nil {
		var e *Error
		if wantsJSON(r) || !errors.As(err, &e) {
			return err
		}
		if secs := retrySeconds(e.RetryAfter); secs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		budget := ""
		if r.MultipartForm != nil {
			budget = r.PostFormValue("budget_ms")
		}
		return s.renderService(w, r, statusOf(e.Code), serviceView{Error: e.Message, Budget: budget})
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusCreated, map[string]string{"id": id, "url": runURL(id)})
		return nil
	}
	http.Redirect(w, r, runURL(id), http.StatusSeeOther)
	return nil
}

// storeUpload reads, checks, analyses and stores an upload, returning its
// run id, or the *Error that says what is wrong with it.
func (s *server) storeUpload(w http.ResponseWriter, r *http.Request) (string, error) {
	addr := clientAddr(r)
	if err := s.uploadsLeft(addr); err != nil {
		return "", err
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "multipart/form-data" {
		return "", errorf(CodeInvalid, "Send the upload as a form (multipart/form-data) with the results file in the field \"results\".")
	}
	err := r.ParseMultipartForm(uploadMemory)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return "", &Error{Code: CodeTooLarge, Title: "The upload is too large",
			Message: fmt.Sprintf("The upload is too large: a results file may be at most %s (and %s of requests), load's report data at most %s. "+
				"Upload fewer windows, or shorter ones.", byteSize(s.uploadLimits.MaxBytes), thousands(s.uploadLimits.MaxRecords), byteSize(maxReportBytes))}
	case err != nil:
		return "", errorf(CodeInvalid, "The form could not be read: send it as multipart/form-data with the results file in the field \"results\".")
	}
	if fe := input.FormErrors(r.PostForm); len(fe) > 0 {
		return "", &Error{Code: CodeInvalid, Fields: fe, Message: "The form could not be taken as sent: " + fe.Error() + "."}
	}
	budget, err := budgetOf(r.PostFormValue("budget_ms"))
	if err != nil {
		return "", err
	}
	f, fh, err := r.FormFile("results")
	if err != nil {
		return "", errorf(CodeInvalid, "Choose a results file to upload (the field \"results\"): load's records CSV, vegeta's CSV or k6's JSON or CSV output.")
	}
	defer f.Close()
	name := uploadFileName(fh.Filename)
	d, err := evidence.Read(name, f, s.uploadLimits)
	if err != nil {
		return "", errorf(CodeInvalid, name+" could not be taken: "+err.Error()+".")
	}
	if len(d.Records) == 0 || len(d.Windows) == 0 {
		return "", errorf(CodeInvalid, name+" holds no requests: upload a file with at least one request's record.")
	}
	if rf, rh, err := r.FormFile("report"); err == nil {
		defer rf.Close()
		data, err := evidence.ReadData(rf, maxReportBytes)
		if err != nil {
			return "", errorf(CodeInvalid, "The report data "+uploadFileName(rh.Filename)+" could not be taken: "+err.Error()+".")
		}
		if err := d.Attach(data); err != nil {
			return "", errorf(CodeInvalid, "The report data "+uploadFileName(rh.Filename)+" does not go with "+name+": "+err.Error()+".")
		}
	}
	id, err := s.saveUpload(w, r, d, budget)
	if err == nil {
		s.uploads.Take(addr, time.Now())
	}
	return id, err
}

// uploadsLeft is nil while addr may store another upload this hour
// (Deps.UploadsPerHour), else the error that says when it may.
func (s *server) uploadsLeft(addr string) error {
	if wait := s.uploads.Wait(addr, time.Now()); wait > 0 {
		return &Error{Code: CodeBusy, Title: "Too many uploads", RetryAfter: wait,
			Message: "Too many results were uploaded from your address in the last hour (a whole building can share one). Try again in " + retryText(wait) + "."}
	}
	return nil
}

// saveUpload analyses d for budget and stores it as a run of the
// request's learner (made if there is none), returning its id.
func (s *server) saveUpload(w http.ResponseWriter, r *http.Request, d evidence.Dataset, budget float64) (string, error) {
	learner := ensureLearner(w, r)
	a := evidence.Analyze(d, evidence.Options{BudgetMS: budget})
	q := uploadRequest(d, a, budget)
	js, err := json.Marshal(q)
	if err != nil {
		return "", err
	}
	id, err := newUploadID()
	if err != nil {
		return "", err
	}
	now := time.Now().UTC()
	run := store.Run{ID: id, Learner: learner, Request: js, Status: store.RunDone, CreatedAt: now, EndedAt: now}
	if d.Data != nil && !d.Data.StartedAt.IsZero() {
		run.StartedAt = d.Data.StartedAt
	}
	if err := s.store.SaveUpload(r.Context(), run, a.Rows, d.Records); err != nil {
		return "", err
	}
	s.log.InfoContext(r.Context(), "upload stored", "run", id, "format", d.Format, "windows", len(d.Windows), "records", len(d.Records))
	return id, nil
}

// exampleFiles are a complete result: the course's own lab (4 workers
// of 20 ms and the limit the course derives for 250 ms, LIMIT=46) run
// through cmd/load as a learner runs it against their own service
// (bench/example.sh says exactly how).
//
//go:embed example/lab.csv example/lab.json
var exampleFiles embed.FS

// exampleBudgetMS is the budget the example's limit was derived for.
const exampleBudgetMS = 250

// exampleDataset is the example read as an upload is.
func exampleDataset() (evidence.Dataset, error) {
	f, err := exampleFiles.Open("example/lab.csv")
	if err != nil {
		return evidence.Dataset{}, err
	}
	defer f.Close()
	d, err := evidence.Read("lab.csv", f, evidence.DefaultLimits())
	if err != nil {
		return d, err
	}
	j, err := exampleFiles.Open("example/lab.json")
	if err != nil {
		return d, err
	}
	defer j.Close()
	data, err := evidence.ReadData(j, maxReportBytes)
	if err != nil {
		return d, err
	}
	return d, d.Attach(data)
}

// uploadExample is POST /service/example: the example stored as one of
// the learner's uploads, as if they had uploaded its two files with a
// 250 ms budget, so they can see what a complete result looks like with
// everything an upload of theirs has.
func (s *server) uploadExample(w http.ResponseWriter, r *http.Request) error {
	addr := clientAddr(r)
	if err := s.uploadsLeft(addr); err != nil {
		return err
	}
	d, err := exampleDataset()
	if err != nil {
		return fmt.Errorf("the example: %w", err)
	}
	id, err := s.saveUpload(w, r, d, exampleBudgetMS)
	if err != nil {
		return err
	}
	s.uploads.Take(addr, time.Now())
	if wantsJSON(r) {
		writeJSON(w, http.StatusCreated, map[string]string{"id": id, "url": runURL(id)})
		return nil
	}
	http.Redirect(w, r, runURL(id), http.StatusSeeOther)
	return nil
}

// budgetOf reads a latency budget in ms: "" is none (0).
func budgetOf(v string) (float64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	b, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 || b > maxBudgetMS {
		return 0, &Error{Code: CodeInvalid, Fields: input.FieldErrors{"budget_ms": "want more than 0 and at most " + thousands(maxBudgetMS) + " ms"},
			Message: fmt.Sprintf("The latency budget %q is not allowed: want a number of milliseconds more than 0 and at most %s, or leave it empty.", v, thousands(maxBudgetMS))}
	}
	return b, nil
}

// uploadFileName is the name a browser gave a file, without any folders,
// at most 120 characters: what the pages call the upload.
func uploadFileName(n string) string {
	n = path.Base(strings.ReplaceAll(n, `\`, "/"))
	if n == "." || n == "/" || n == "" {
		n = "results"
	}
	if r := []rune(n); len(r) > 120 {
		n = string(r[:120])
	}
	return n
}

// uploadRequest is the stored request of an upload: its windows as a
// preset's (Rates, or Clients for a closed loop; Seconds the longest
// window), what load's report data says of the run, and the upload.
func uploadRequest(d evidence.Dataset, a evidence.Analysis, budget float64) runner.Request {
	var p measure.Preset
	closed := slices.ContainsFunc(d.Windows, func(w evidence.Window) bool { return w.Clients > 0 })
	p.Mode = runner.ModeOpen
	if closed {
		p.Mode = runner.ModeClosed
	}
	for _, w := range d.Windows {
		if closed {
			p.Clients = append(p.Clients, w.Clients)
		} else {
			p.Rates = append(p.Rates, w.Offered)
		}
		p.Seconds = math.Max(p.Seconds, w.Seconds)
	}
	if d.Data != nil {
		p.Seed, p.TimeoutMS = d.Data.Seed, int(d.Data.TimeoutMS)
	}
	return runner.Request{Preset: p, Upload: &runner.Upload{Dataset: d, Analysis: a, BudgetMS: budget}}
}

// formatName is a results file's format as the pages say it.
func formatName(f evidence.Format) string {
	switch f {
	case evidence.LoadCSV:
		return "load CSV"
	case evidence.VegetaCSV:
		return "vegeta CSV"
	case evidence.K6JSON:
		return "k6 JSON"
	case evidence.K6CSV:
		return "k6 CSV"
	}
	return string(f)
}

// uploadName is the file an upload was made of.
func uploadName(q runner.Request) string {
	if q.Upload == nil {
		return ""
	}
	return q.Upload.Dataset.Name
}

// uploadWords says what an upload holds, for titles and lists: "Your
// service · vegeta CSV · 3 windows, 50–400/s".
func uploadWords(q runner.Request) string {
	return "Your service · " + presetWords(q)
}

// uploadPresetWords is presetWords for an upload: its format, windows and
// rates ("vegeta CSV · 3 windows, 50–400/s").
func uploadPresetWords(q runner.Request) string {
	// A file's offered rates are measured (arrivals over the window), not
	// asked for: rounded as the rows are.
	rates := make([]float64, len(q.Rates))
	for i, r := range q.Rates {
		rates[i] = math.Round(r*10) / 10
	}
	load := spanText(rates, "/s")
	if q.Closed() {
		load = spanText(intsAsFloats(q.Clients), " clients")
	}
	return formatName(q.Upload.Dataset.Format) + " · " + counted(q.Windows(), "window", "windows") + ", " + load
}

// kneeWords says where an analysis found the knee, in a phrase.
func kneeWords(a evidence.Analysis) string {
	if a.Knee < 0 || a.Knee >= len(a.Rows) {
		return "no knee: every window kept up"
	}
	return "knee at " + lowerFirst(windowName(a.Rows[a.Knee].Window)) + " (" + fmtNum(a.Rows[a.Knee].Offered) + "/s offered)"
}

// thousands writes n with thin groups of three: 1,000,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// deleteUpload is POST /service/{id}/delete: the learner's own upload,
// with its rows, records and events; anyone else's, or a lab run, is as
// a run that does not exist.
func (s *server) deleteUpload(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if err := parseForm(r); err != nil {
		return err
	}
	learner := learnerID(r)
	if learner == "" || !isUploadID(id) {
		return noSuchRun(id)
	}
	if err := s.store.DeleteUpload(r.Context(), id, learner); errors.Is(err, store.ErrNoRun) {
		return noSuchRun(id)
	} else if err != nil {
		return err
	}
	if wantsJSON(r) {
		writeJSON(w, http.StatusOK, map[string]string{"deleted": id})
		return nil
	}
	http.Redirect(w, r, "/service?deleted=1", http.StatusSeeOther)
	return nil
}

// uploadView is the analysis of an upload on its run page: the analysis
// (at the budget asked for, when it is not the stored one, re-derived
// from the stored analysis: Analysis.WithBudget), the form to change the budget and what was
// wrong with the budget asked for.
type uploadView struct {
	Upload    *runner.Upload
	Analysis  evidence.Analysis
	Budget    string // the budget field as asked for, or the stored one
	BudgetErr string
	Records   int
}

// uploadViewOf is v's analysis for its page; budgetQ is the query's
// budget_ms ("" for the stored analysis).
func uploadViewOf(v runView, budgetQ string) *uploadView {
	u := v.Request.Upload
	uv := &uploadView{Upload: u, Analysis: u.Analysis, Records: v.Records}
	if u.BudgetMS > 0 {
		uv.Budget = fmtNum(u.BudgetMS)
	}
	if budgetQ == "" {
		return uv
	}
	uv.Budget = budgetQ
	b, err := budgetOf(budgetQ)
	if err != nil {
		uv.BudgetErr = err.(*Error).Message
		return uv
	}
	uv.Analysis = u.Analysis.WithBudget(b)
	return uv
}

// uploadReport is GET /runs/{id}/report.html: an upload's self-contained
// report (evidence.WriteReport) as a file, at the stored budget or the
// query's budget_ms.
func (s *server) uploadReport(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	v, err := s.loadRun(r, id, false)
	if err != nil {
		return err
	}
	u := v.Request.Upload
	if u == nil {
		return &Error{Code: CodeNotFound, Title: "No report", Message: "Run " + id + " is a run of the lab, not an upload: only uploads have a report.",
			Links: []errorLink{{"Back to the run", runURL(id)}}}
	}
	b := u.BudgetMS
	if q := r.URL.Query().Get("budget_ms"); q != "" {
		if b, err = budgetOf(q); err != nil {
			return err
		}
	}
	a := u.Analysis.WithBudget(b)
	base := strings.TrimSuffix(u.Dataset.Name, path.Ext(u.Dataset.Name))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+safeFileName(base)+`-report.html"`)
	return evidence.WriteReport(w, u.Dataset, a)
}

// safeFileName keeps letters, digits, dots, dashes and underscores of n
// for a Content-Disposition filename ("upload" when nothing is left).
func safeFileName(n string) string {
	b := []byte{}
	for _, c := range []byte(n) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b = append(b, c)
		}
	}
	if len(b) == 0 {
		return "upload"
	}
	return string(b)
}

// uploadChart draws an upload's analysis as its report does, the two
// panels side by side (evidence.Chart), without a model: the course has
// none of the learner's service.
func uploadChart(a evidence.Analysis, id string) chart.Chart {
	c := evidence.Chart(a, id)
	c.Title = "Your service, window by window"
	c.Desc += " No model is drawn: the course has no model of your service."
	return c
}

// uploadExport is one upload in the progress export: the file as read
// (without its records, which stay downloadable at RecordsURL), its rows
// and its analysis.
type uploadExport struct {
	ID         string            `json:"id"`
	URL        string            `json:"url"`
	RecordsURL string            `json:"records_url"`
	CreatedAt  time.Time         `json:"created_at"`
	Dataset    evidence.Dataset  `json:"dataset"`
	BudgetMS   float64           `json:"budget_ms,omitempty"`
	Rows       []result.Row      `json:"rows"`
	Analysis   evidence.Analysis `json:"analysis"`
}

// uploadsExport lists the learner's uploads for the progress export.
func (s *server) uploadsExport(ctx context.Context, learner string) ([]uploadExport, error) {
	out := []uploadExport{}
	if learner == "" {
		return out, nil
	}
	runs, err := s.store.Uploads(ctx, learner)
	if err != nil {
		return nil, err
	}
	for _, sr := range runs {
		var q runner.Request
		if err := json.Unmarshal(sr.Request, &q); err != nil || q.Upload == nil {
			continue
		}
		out = append(out, uploadExport{ID: sr.ID, URL: runURL(sr.ID), RecordsURL: runURL(sr.ID) + "/records.csv", CreatedAt: sr.CreatedAt,
			Dataset: q.Upload.Dataset, BudgetMS: q.Upload.BudgetMS, Rows: q.Upload.Analysis.Rows, Analysis: q.Upload.Analysis})
	}
	return out, nil
}

// uploadSettings lists an upload's settings in words: the file and what
// its tool measured, then what load's report data says of how it ran.
// The keys the lab's list shares (load, seconds, seed, timeout) pair with
// a lab run's in a comparison.
func uploadSettings(q runner.Request) []setting {
	d := q.Upload.Dataset
	timing := "from when each request was due (an open loop's schedule): a generator that fell behind still charged the wait to the latency"
	if d.Timing == evidence.FromSent {
		timing = "from when each request was actually sent: time a request waited in a saturated generator is missing (coordinated omission)"
	}
	load := "open loop: " + joinFloats(q.Rates) + " requests a second, one window each"
	if q.Closed() {
		load = "closed loop: " + joinInts(q.Clients) + " clients, one window each"
	}
	budget := "none given"
	if q.Upload.BudgetMS > 0 {
		budget = fmtNum(q.Upload.BudgetMS) + " ms"
	}
	out := []setting{
		{Key: "file", Label: "Results file", Value: d.Name},
		{Key: "format", Label: "Written by", Value: formatName(d.Format)},
		{Key: "timing", Label: "Latency timed", Value: timing},
		{Key: "load", Label: "Load", Value: load},
		{Key: "seconds", Label: "Longest window", Value: fmtNum(q.Seconds) + " s"},
		{Key: "budget", Label: "Latency budget", Value: budget},
	}
	data := d.Data
	if data == nil {
		return append(out, setting{Key: "report", Label: "load's report data", Value: "not uploaded: no target, seed or gauges known"})
	}
	out = append(out, setting{Key: "target", Label: "Target", Value: data.Target})
	if data.Schedule != "" {
		out = append(out, setting{Key: "schedule", Label: "Arrivals", Value: data.Schedule})
	}
	if data.Loop != "closed" {
		out = append(out, setting{Key: "seed", Label: "Seed of the arrivals", Value: u64(data.Seed)})
	}
	if data.TimeoutMS > 0 {
		out = append(out, setting{Key: "timeout", Label: "Caller's timeout", Value: fmtNum(data.TimeoutMS/1000) + " s"})
	}
	if data.QueueHeader != "" {
		out = append(out, setting{Key: "queue_header", Label: "Queue wait read from", Value: "the response header " + data.QueueHeader})
	}
	if data.Stopped != "" {
		out = append(out, setting{Key: "stopped", Label: "The knee search stopped", Value: data.Stopped})
	}
	return out
}

// reportURL is where an upload's report downloads, at the budget the
// page shows.
func reportURL(id string, uv *uploadView) string {
	u := runURL(id) + "/report.html"
	if uv.BudgetErr == "" && uv.Budget != "" && uv.Budget != fmtNum(uv.Upload.BudgetMS) {
		u += "?budget_ms=" + url.QueryEscape(uv.Budget)
	}
	return u
}
