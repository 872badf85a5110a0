package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"capacitylab/input"
	"capacitylab/lessons"
	"capacitylab/recorder"
	"capacitylab/runner"
	"capacitylab/store"
)

// Limits on a record a learner writes.
const (
	maxRecordField = 2000 // characters in one field, after CRLF → LF
	recordRunsMax  = 50   // the learner's most recent runs offered to attach
)

// recordRequired lists the fields that must be filled for a record to be saved.
var recordRequired = []string{lessons.FieldNumber, lessons.FieldCriterion}

// recordRun is one of the learner's saved runs, as the record form offers it.
type recordRun struct {
	ID    string
	Label string
}

// recordDraft is a record the server refused: what the learner typed, the
// run they chose and one message per bad field, shown back in the form.
type recordDraft struct {
	Block  string
	Fields map[string]string
	Run    string
	Errors input.FieldErrors // by field name, and "run"
}

// recordCtx is what record blocks on a page need beyond the learner's
// state: their runs to attach and, after a refused save, the draft.
type recordCtx struct {
	Runs  []recordRun
	Draft *recordDraft
}

type recordCtxKey struct{}

// recordData is what one record block shows.
type recordData struct {
	Saved  *store.Record
	Values map[string]string
	Run    string
	Errors input.FieldErrors
	Runs   []recordRun
}

// recordDataOf gathers what the record block b shows: a refused draft if
// the request carries one for b, else the saved record, else empty fields.
func recordDataOf(ctx context.Context, b *lessons.RecordBlock, st store.LessonState) recordData {
	rc, _ := ctx.Value(recordCtxKey{}).(*recordCtx)
	d := recordData{Values: map[string]string{}}
	if saved, ok := st.Records[b.ID]; ok {
		d.Saved = &saved
		d.Values, d.Run = saved.Fields, saved.Run
	}
	if rc == nil {
		return d
	}
	d.Runs = rc.Runs
	if rc.Draft != nil && rc.Draft.Block == b.ID {
		d.Values, d.Run, d.Errors = rc.Draft.Fields, rc.Draft.Run, rc.Draft.Errors
	}
	return d
}

// recordDraftOf returns the refused draft the request carries, or nil.
func recordDraftOf(ctx context.Context) *recordDraft {
	if rc, ok := ctx.Value(recordCtxKey{}).(*recordCtx); ok {
		return rc.Draft
	}
	return nil
}

// lessonStatus is the status of a lesson page: 400 when it shows a
// refused record, 200 otherwise.
func lessonStatus(ctx context.Context) int {
	if recordDraftOf(ctx) != nil {
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// withRecords adds to r's context what the lesson's record blocks need:
// the learner's own saved runs, newest first, and draft if not nil. A
// lesson without record blocks costs nothing.
func (s *server) withRecords(r *http.Request, l *lessons.Lesson, draft *recordDraft) (*http.Request, error) {
	if !hasRecord(l) {
		return r, nil
	}
	rc := &recordCtx{Draft: draft}
	if learner := learnerID(r); learner != "" {
		runs, err := s.learnerRuns(r.Context(), learner)
		if err != nil {
			return nil, err
		}
		rc.Runs = runs
	}
	return r.WithContext(context.WithValue(r.Context(), recordCtxKey{}, rc)), nil
}

func hasRecord(l *lessons.Lesson) bool {
	for _, b := range l.Blocks() {
		if _, ok := b.(*lessons.RecordBlock); ok {
			return true
		}
	}
	return false
}

// learnerRuns lists the learner's own saved runs, newest first, labelled
// with their status, knobs and rates.
func (s *server) learnerRuns(ctx context.Context, learner string) ([]recordRun, error) {
	runs, err := s.store.LearnerRuns(ctx, learner, recordRunsMax)
	if err != nil {
		return nil, err
	}
	var out []recordRun
	for _, sr := range runs {
		out = append(out, recordRun{ID: sr.ID, Label: s.runLabelOf(sr)})
	}
	return out, nil
}

// runLabelCacheSize bounds the run labels the server keeps.
const runLabelCacheSize = 4096

// runLabelOf is runLabel, kept by run id and status (the only field of a
// saved run that changes), so a lesson page with a record block does not
// decode up to recordRunsMax requests per view.
func (s *server) runLabelOf(sr store.Run) string {
	l, _ := s.runLabels.getOrMake(sr.ID+"\x00"+string(sr.Status), func() (string, bool, error) { return runLabel(sr), true, nil })
	return l
}

// runLabel names a run in the record form and its Markdown.
func runLabel(sr store.Run) string {
	var q runner.Request
	json.Unmarshal(sr.Request, &q)
	label := fmt.Sprintf("%s · %s · %s", fmtTime(sr.CreatedAt), sr.Status, requestSummary(q))
	if sr.Block != "" {
		label += " · from " + sr.Block
	}
	return label
}

// findRecord finds the lesson and record block a record URL names.
func (s *server) findRecord(r *http.Request, id string) (*lessons.Lesson, *lessons.RecordBlock, error) {
	c, err := s.loadCourse()
	if err != nil {
		return nil, nil, err
	}
	slug := chi.URLParam(r, "slug")
	i := findLesson(c, slug)
	if i < 0 {
		return nil, nil, errorf(CodeNotFound, fmt.Sprintf("There is no lesson called %q.", slug))
	}
	b, _ := c.Lessons[i].Block(id)
	rb, ok := b.(*lessons.RecordBlock)
	if !ok {
		return nil, nil, errorf(CodeNotFound, fmt.Sprintf("Lesson %q has no record block called %q.", slug, id))
	}
	return c.Lessons[i], rb, nil
}

// recordResponse is the JSON answer to saving a record: the record as
// stored and the block's HTML, which lesson.js swaps into the page.
type recordResponse struct {
	Block  string       `json:"block"`
	Kind   string       `json:"kind"`
	Record store.Record `json:"record"`
	HTML   string       `json:"html"`
}

// recordRefused is the JSON answer to a record that was not saved: the
// error path's body, with one message per bad field, and the block's HTML
// with what the learner typed and the messages.
type recordRefused struct {
	errorBody
	HTML string `json:"html"`
}

// saveRecord is POST /lessons/{slug}/record/{id}: the five fields and
// run (a saved run id of the learner's, or empty for none).
func (s *server) saveRecord(w http.ResponseWriter, r *http.Request) error {
	l, b, err := s.findRecord(r, chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	if err := parseForm(r); err != nil {
		return err
	}
	d := &recordDraft{Block: b.ID, Fields: map[string]string{}, Errors: input.FieldErrors{}}
	for _, f := range b.Fields {
		v := strings.ReplaceAll(r.PostFormValue(f.Name), "\r\n", "\n")
		d.Fields[f.Name] = v
		if n := utf8.RuneCountInString(v); n > maxRecordField {
			d.Errors[f.Name] = fmt.Sprintf("%s is %d characters long: the limit is %d. Shorten it; nothing you typed was lost.", f.Label, n, maxRecordField)
		}
	}
	for _, name := range recordRequired {
		if strings.TrimSpace(d.Fields[name]) == "" {
			f, _ := b.Field(name)
			d.Errors[name] = fmt.Sprintf("%s is empty: a record needs at least the number and the criterion it meets.", f.Label)
		}
	}
	d.Run = strings.TrimSpace(r.PostFormValue("run"))
	if d.Run == "none" {
		d.Run = ""
	}
	learner := learnerID(r)
	if d.Run != "" {
		sr, err := s.store.Run(r.Context(), d.Run)
		switch {
		case errors.Is(err, store.ErrNoRun) || (err == nil && (learner == "" || sr.Learner != learner)):
			d.Errors["run"] = fmt.Sprintf("Run %q is not one of your saved runs: choose one of yours from the list, or none.", d.Run)
		case err != nil:
			return err
		}
	}
	if len(d.Errors) > 0 {
		return s.recordRefused(w, r, l, b, d)
	}
	learner = ensureLearner(w, r)
	rec, err := s.store.SaveRecord(r.Context(), learner, store.Record{Lesson: l.Slug, Block: b.ID, Fields: d.Fields, Run: d.Run})
	if err != nil {
		return err
	}
	if !wantsJSON(r) {
		http.Redirect(w, r, lessonURL(l.Slug)+"#"+b.ID, http.StatusSeeOther)
		return nil
	}
	if learnerID(r) == "" {
		r = r.Clone(r.Context())
		r.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
	}
	html, err := s.recordHTML(r, l, b, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, recordResponse{Block: b.ID, Kind: b.Kind(), Record: rec, HTML: html})
	return nil
}

// recordRefused answers a refused record: the lesson page again (400) with
// the form as the learner filled it, or JSON with the block's HTML.
func (s *server) recordRefused(w http.ResponseWriter, r *http.Request, l *lessons.Lesson, b *lessons.RecordBlock, d *recordDraft) error {
	msg := fmt.Sprintf("The record was not saved: %d field(s) need attention; what you typed is still in the form.", len(d.Errors))
	if wantsJSON(r) {
		html, err := s.recordHTML(r, l, b, d)
		if err != nil {
			return err
		}
		e := &Error{Code: CodeInvalid, Message: msg, Fields: d.Errors}
		writeJSON(w, http.StatusBadRequest, recordRefused{errorBody: e.body(0), HTML: html})
		return nil
	}
	r2, err := s.withRecords(r, l, d)
	if err != nil {
		return err
	}
	return s.lesson(w, r2)
}

// recordHTML renders one record block for the request's learner.
func (s *server) recordHTML(r *http.Request, l *lessons.Lesson, b *lessons.RecordBlock, d *recordDraft) (string, error) {
	r, err := s.withRecords(r, l, d)
	if err != nil {
		return "", err
	}
	st := store.LessonState{}
	if learner := learnerID(r); learner != "" {
		if st, err = s.store.LessonState(r.Context(), learner, l.Slug); err != nil {
			return "", err
		}
	}
	return renderString(r.Context(), blockView(l, b, st))
}

// recordURL is where a saved record downloads as Markdown.
func recordURL(slug, id string) string { return actionURL(slug, "record", id) + ".md" }

// recordMarkdown is GET /lessons/{slug}/record/{id}.md: the learner's
// saved record as a Markdown file.
func (s *server) recordMarkdown(w http.ResponseWriter, r *http.Request) error {
	id, ok := strings.CutSuffix(chi.URLParam(r, "id"), ".md")
	if !ok {
		return errorf(CodeNotFound, "There is no page at "+r.URL.Path+": a record downloads from its address ending in .md.")
	}
	l, b, err := s.findRecord(r, id)
	if err != nil {
		return err
	}
	learner := learnerID(r)
	notSaved := errorf(CodeNotFound, "You have not saved this record yet: fill it in on the lesson page and press Save record.")
	if learner == "" {
		return notSaved
	}
	rec, err := s.store.Record(r.Context(), learner, b.ID)
	if errors.Is(err, store.ErrNoRecord) {
		return notSaved
	}
	if err != nil {
		return err
	}
	var run *store.Run
	if rec.Run != "" {
		sr, err := s.store.Run(r.Context(), rec.Run)
		switch {
		case err == nil && sr.Learner == learner:
			run = &sr
		case err != nil && !errors.Is(err, store.ErrNoRun):
			return err
		}
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+l.Slug+`-`+b.ID+`.md"`)
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write([]byte(recordMarkdownText(l, b, rec, run, siteBase(r))))
	return err
}

// siteBase is the scheme and host the request came to, for links in a
// downloaded file.
func siteBase(r *http.Request) string { return absURL(r, "") }

// recordMarkdownText writes a record as Markdown: a heading per field (in
// the block's order, with the block's labels), then the attached run's
// settings, its rows as a table and a link to its page.
func recordMarkdownText(l *lessons.Lesson, b *lessons.RecordBlock, rec store.Record, run *store.Run, base string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Record: %s\n\n", l.Title)
	fmt.Fprintf(&sb, "Lesson: %s%s (block %s). Written %s, last updated %s.\n\n",
		base, lessonURL(l.Slug), b.ID, isoTime(rec.CreatedAt), isoTime(rec.UpdatedAt))
	for _, f := range b.Fields {
		fmt.Fprintf(&sb, "## %s\n\n", f.Label)
		if v := strings.TrimSpace(rec.Fields[f.Name]); v != "" {
			sb.WriteString(v + "\n\n")
		} else {
			sb.WriteString("(left empty)\n\n")
		}
	}
	sb.WriteString("## Attached run\n\n")
	if run == nil {
		if rec.Run != "" {
			fmt.Fprintf(&sb, "Run %s is no longer stored.\n", rec.Run)
		} else {
			sb.WriteString("None.\n")
		}
		return sb.String()
	}
	var q runner.Request
	json.Unmarshal(run.Request, &q)
	fmt.Fprintf(&sb, "Run [%s](%s/runs/%s), %s, started %s.\n\n", run.ID, base, run.ID, run.Status, isoTime(run.CreatedAt))
	fmt.Fprintf(&sb, "Settings: %s.\n\n", requestSummary(q))
	if len(run.Rows) == 0 {
		sb.WriteString("No windows were measured.\n")
		return sb.String()
	}
	// The columns and cells of the lessons' recorded tables.
	cols := lessons.Columns(tableOf(q))
	sb.WriteString("| " + strings.Join(cols, " | ") + " |\n")
	sb.WriteString("|" + strings.Repeat("---:|", len(cols)) + "\n")
	for _, row := range run.Rows {
		sb.WriteString("| " + strings.Join(recorder.RowCells(row, cols), " | ") + " |\n")
	}
	return sb.String()
}

// recordErrorList lists a refused record's messages as (field, message)
// pairs in the form's order, the run last.
func recordErrorList(b *lessons.RecordBlock, d recordData) [][2]string {
	var out [][2]string
	for _, f := range b.Fields {
		if msg := d.Errors[f.Name]; msg != "" {
			out = append(out, [2]string{f.Name, msg})
		}
	}
	if msg := d.Errors["run"]; msg != "" {
		out = append(out, [2]string{"run", msg})
	}
	return out
}

// recordDescribedBy is a field's aria-describedby: its hint and its error.
func recordDescribedBy(block string, f lessons.RecordField, d recordData) string {
	var ids []string
	if f.Hint != "" {
		ids = append(ids, block+"-"+f.Name+"-hint")
	}
	if d.Errors[f.Name] != "" {
		ids = append(ids, block+"-"+f.Name+"-error")
	}
	return strings.Join(ids, " ")
}

// recordFirstError names the first field with a message, whose control
// takes autofocus when the page comes back without JavaScript; "" if none.
func recordFirstError(b *lessons.RecordBlock, d recordData) string {
	if list := recordErrorList(b, d); len(list) > 0 {
		return list[0][0]
	}
	return ""
}

// recordRunLabel is the label of the attached run among the learner's
// runs, or a note that it is no longer listed.
func recordRunLabel(d recordData) string {
	for _, rr := range d.Runs {
		if rr.ID == d.Run {
			return rr.Label
		}
	}
	return "no longer among your recent runs"
}
