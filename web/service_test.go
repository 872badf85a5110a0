package web

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/evidence"
	"capacitylab/result"
)

// serviceRecords are the records of a load sweep of a service that
// answers at most 150 a second, each in 4 ms when it keeps up: windows
// of 2 s at 50, 100, 200 and 400 a second, arrivals evenly spaced. Past
// its ceiling every request waits behind the ones before it, and those
// that would end after the window's end plus 1 s give up.
func serviceRecords() []result.Record {
	var recs []result.Record
	for w, rate := range []float64{50, 100, 200, 400} {
		gap := time.Duration(float64(time.Second) / rate)
		free := time.Duration(0)
		for i := range int(rate * 2) {
			at := time.Duration(i) * gap
			start := max(at, free)
			end := start + time.Second/150
			r := result.Record{Window: w, Seq: i, Intended: at, Sent: at + 50*time.Microsecond, End: end, Outcome: result.OK, Status: 200,
				QueueWaitMS: -1, ServiceMS: -1}
			if end > 3*time.Second {
				r.End, r.Outcome, r.Status, r.Reason = at+time.Second, result.Gaveup, 0, result.ReasonReadTimeout
			} else {
				free = end
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// loadCSV is recs in load's records CSV.
func loadCSV(t testing.TB, recs []result.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := result.WriteCSV(&b, recs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// upload posts the form of /service: files by field (name and content)
// and fields.
func (s *testSite) upload(c *http.Client, files map[string][2]string, fields url.Values, header map[string]string) response {
	s.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			mw.WriteField(k, v)
		}
	}
	for field, f := range files {
		fw, err := mw.CreateFormFile(field, f[0])
		if err != nil {
			s.t.Fatal(err)
		}
		io.WriteString(fw, f[1])
	}
	mw.Close()
	req, err := http.NewRequest("POST", s.srv.URL+"/service", &body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res, string(b)}
}

// uploaded uploads data as name and returns the new run's id.
func (s *testSite) uploaded(c *http.Client, name string, data []byte, budget string) string {
	s.t.Helper()
	res := s.upload(c, map[string][2]string{"results": {name, string(data)}}, url.Values{"budget_ms": {budget}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("upload: %d %s", res.StatusCode, res.body)
	}
	id, ok := strings.CutPrefix(res.Header.Get("Location"), "/runs/")
	if !ok || !isUploadID(id) {
		s.t.Fatalf("upload went to %q", res.Header.Get("Location"))
	}
	return id
}

// An upload of load's CSV is stored as one of the learner's runs: its
// rows are evidence.Analyze's of the same file, exactly, on the page and
// in the API; its records download as they were; the page shows the
// knee, the ceiling, the limit for the budget and the checklist, and the
// budget form recomputes the limit without storing it.
func TestServiceUploadStoredAndShown(t *testing.T) {
	s := newSite(t)
	c := s.client()
	data := loadCSV(t, serviceRecords())
	d, err := evidence.Read("myservice.csv", bytes.NewReader(data), evidence.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Analyze(d, evidence.Options{BudgetMS: 100})
	if want.Knee < 0 {
		t.Fatalf("the test's sweep has no knee: %+v", want.Rows)
	}
	id := s.uploaded(c, "myservice.csv", data, "100")

	var api struct {
		Rows    []result.Row `json:"rows"`
		Records int          `json:"records"`
		Mine    bool         `json:"mine"`
		Request struct {
			Upload struct {
				Analysis evidence.Analysis `json:"analysis"`
				BudgetMS float64           `json:"budget_ms"`
			} `json:"upload"`
		} `json:"request"`
	}
	res := s.get(c, "/api/runs/"+id)
	if err := json.Unmarshal([]byte(res.body), &api); err != nil || res.StatusCode != 200 {
		t.Fatalf("/api/runs/%s: %d %v %s", id, res.StatusCode, err, res.body)
	}
	if !reflect.DeepEqual(api.Rows, want.Rows) {
		t.Errorf("stored rows differ from evidence.Analyze's:\n got %+v\nwant %+v", api.Rows, want.Rows)
	}
	if api.Records != len(d.Records) || !api.Mine || api.Request.Upload.BudgetMS != 100 {
		t.Errorf("records %d (want %d), mine %v, budget %v", api.Records, len(d.Records), api.Mine, api.Request.Upload.BudgetMS)
	}
	if api.Request.Upload.Analysis.Knee != want.Knee || api.Request.Upload.Analysis.Ceiling != want.Ceiling {
		t.Errorf("stored analysis knee %d ceiling %v, want %d %v", api.Request.Upload.Analysis.Knee, api.Request.Upload.Analysis.Ceiling, want.Knee, want.Ceiling)
	}

	page := s.get(c, "/runs/"+id)
	if page.StatusCode != 200 {
		t.Fatalf("run page: %d", page.StatusCode)
	}
	title := testIDText(t, page.body, "run-title")
	span := numText(want.Rows[0].Offered) + "–" + numText(want.Rows[3].Offered) + "/s"
	if !strings.Contains(title, "myservice.csv") || !strings.Contains(title, "load CSV · 4 windows, "+span) {
		t.Errorf("title %q", title)
	}
	knee := testIDText(t, page.body, "upload-knee")
	if !strings.Contains(knee, windowName(want.Knee)) {
		t.Errorf("knee %q, want %s", knee, windowName(want.Knee))
	}
	if got := testIDText(t, page.body, "upload-ceiling"); !strings.Contains(got, numText(want.Ceiling)) {
		t.Errorf("ceiling %q, want %s", got, numText(want.Ceiling))
	}
	items := find(parse(t, page.body), func(n nodeT) bool { _, ok := attr(n, "data-check"); return ok })
	if len(items) != len(want.Checklist) || len(items) == 0 {
		t.Errorf("%d checklist items, want %d", len(items), len(want.Checklist))
	}
	for i, n := range items {
		if i < len(want.Checklist) && must(attr(n, "data-met")) != boolText(want.Checklist[i].Met) {
			t.Errorf("checklist %s met=%s, want %v", want.Checklist[i].ID, must(attr(n, "data-met")), want.Checklist[i].Met)
		}
	}
	// The page and the upload's report say the same: both draw evidence's
	// summary, word for word.
	report := s.get(c, "/runs/"+id+"/report.html")
	inReport := map[string]bool{}
	for _, dd := range find(parse(t, report.body), func(n nodeT) bool { return n.Data == "dd" }) {
		inReport[strings.TrimSpace(text(dd))] = true
	}
	for _, f := range evidence.Summary(want) {
		if got := strings.TrimSpace(testIDText(t, page.body, "upload-"+f.ID)); got != f.Value {
			t.Errorf("the page's %s: %q, want evidence's %q", f.Term, got, f.Value)
		}
		if !inReport[f.Value] {
			t.Errorf("the report lacks the page's %s %q", f.Term, f.Value)
		}
	}
	if want.Limit != nil {
		if got := testIDText(t, page.body, "upload-limit"); !strings.Contains(got, itoa(want.Limit.Limit)+" waiting") {
			t.Errorf("limit %q, want %d waiting", got, want.Limit.Limit)
		}
	}
	// Another budget: derived again from the stored analysis, not stored.
	want50 := evidence.Analyze(d, evidence.Options{BudgetMS: 50})
	page = s.get(c, "/runs/"+id+"?budget_ms=50")
	if want50.Limit != nil {
		if got := testIDText(t, page.body, "upload-limit"); !strings.Contains(got, itoa(want50.Limit.Limit)+" waiting") || !strings.Contains(got, "budget of 50 ms") {
			t.Errorf("limit at 50 ms %q, want %d waiting", got, want50.Limit.Limit)
		}
	}
	if res := s.get(c, "/runs/"+id+"?budget_ms=-3"); res.StatusCode != 400 || !strings.Contains(testIDText(t, res.body, "upload-budget-error"), "more than 0") {
		t.Errorf("budget -3: %d", res.StatusCode)
	}
	if got, _ := s.store.Run(t.Context(), id); !strings.Contains(string(got.Request), `"budget_ms":100`) {
		t.Errorf("the stored budget changed: %s", got.Request)
	}

	// The records download as they were uploaded.
	res = s.get(c, "/runs/"+id+"/records.csv")
	if res.StatusCode != 200 || res.body != string(data) {
		t.Errorf("records.csv: %d, same as uploaded: %v", res.StatusCode, res.body == string(data))
	}
	if res := s.get(c, "/runs/"+id+".csv"); res.StatusCode != 200 || strings.Count(res.body, "\n") != len(want.Rows)+1 {
		t.Errorf("rows CSV: %d %q", res.StatusCode, res.body)
	}
	if res := s.get(c, "/runs/"+id+"/report.html"); res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Disposition"), `myservice-report.html`) {
		t.Errorf("report: %d %q", res.StatusCode, res.Header.Get("Content-Disposition"))
	}
	// Compared with a lesson's recorded run, settings paired by key: the
	// file's beside "—", the windows' load beside the lab's.
	res = s.get(c, "/runs/compare?a="+id+"&b=recorded:measure-sweep")
	if res.StatusCode != 200 {
		t.Fatalf("compare with a recorded run: %d", res.StatusCode)
	}
	settings := map[string][]string{}
	for _, tr := range find(find(parse(t, res.body), byTestID("compare-settings"))[0], func(n nodeT) bool { return n.Data == "tr" }) {
		var cells []string
		for _, cell := range find(tr, func(n nodeT) bool { return n.Data == "td" || n.Data == "th" }) {
			cells = append(cells, text(cell))
		}
		settings[cells[0]] = cells[1:]
	}
	if got := settings["Results file differs"]; !reflect.DeepEqual(got, []string{"myservice.csv", "—"}) {
		t.Errorf("compared results file: %q", got)
	}
	if got := settings["Workers differs"]; !reflect.DeepEqual(got, []string{"—", "1"}) {
		t.Errorf("compared workers: %q", got)
	}
	// Listed on the page, in the learner's runs and in the runs list.
	if res := s.get(c, "/service"); !strings.Contains(testIDText(t, res.body, "service-uploads"), "myservice.csv") {
		t.Error("the upload is not listed on /service")
	}
	if res := s.get(c, "/runs"); !strings.Contains(testIDText(t, res.body, "runs-mine"), "Your service: myservice.csv") {
		t.Error("the upload is not in the learner's runs")
	}
}

// A file with a bad line is refused naming the line, on the page with the
// form and the budget kept; nothing is stored, and the learner's earlier
// upload is untouched.
func TestServiceUploadBadLineRefused(t *testing.T) {
	s := newSite(t)
	c := s.client()
	good := loadCSV(t, serviceRecords())
	id := s.uploaded(c, "good.csv", good, "")
	lines := strings.SplitAfter(string(good), "\n")
	lines[4] = "0,3,not-a-time,1,2,1,ok,200,,-1,-1\n" // line 5 of the file
	res := s.upload(c, map[string][2]string{"results": {"bad.csv", strings.Join(lines, "")}}, url.Values{"budget_ms": {"250"}}, nil)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad line: %d, want 400", res.StatusCode)
	}
	msg := testIDText(t, res.body, "service-error")
	if !strings.Contains(msg, "line 5") || !strings.Contains(msg, "bad.csv") {
		t.Errorf("error %q does not name bad.csv's line 5", msg)
	}
	if v := must(attr(find(parse(t, res.body), byTestID("service-budget"))[0], "value")); v != "250" {
		t.Errorf("budget field kept as %q, want 250", v)
	}
	if !hasTestID(t, res.body, "service-form") {
		t.Error("the form is not on the refusal's page")
	}
	ups, err := s.store.Uploads(t.Context(), learnerOf(t, s, c))
	if err != nil || len(ups) != 1 || ups[0].ID != id {
		t.Fatalf("uploads after the refusal: %v %v, want %s alone", ups, err, id)
	}
	if n, _ := s.store.CountRecords(t.Context(), id); n != len(serviceRecords()) {
		t.Errorf("the earlier upload has %d records, want %d", n, len(serviceRecords()))
	}
	// JSON callers get the one error body.
	res = s.upload(c, map[string][2]string{"results": {"bad.csv", strings.Join(lines, "")}}, nil, map[string]string{"Accept": "application/json"})
	if res.StatusCode != 400 || !strings.Contains(res.body, `"code": "invalid"`) || !strings.Contains(res.body, "line 5") {
		t.Errorf("JSON: %d %s", res.StatusCode, res.body)
	}
	// A bad budget, and no file at all.
	res = s.upload(c, map[string][2]string{"results": {"good.csv", string(good)}}, url.Values{"budget_ms": {"soon"}}, nil)
	if res.StatusCode != 400 || !strings.Contains(testIDText(t, res.body, "service-error"), `"soon"`) {
		t.Errorf("bad budget: %d", res.StatusCode)
	}
	res = s.upload(c, nil, url.Values{"budget_ms": {"100"}}, nil)
	if res.StatusCode != 400 || !strings.Contains(testIDText(t, res.body, "service-error"), "Choose a results file") {
		t.Errorf("no file: %d", res.StatusCode)
	}
	if ups, _ := s.store.Uploads(t.Context(), learnerOf(t, s, c)); len(ups) != 1 {
		t.Errorf("%d uploads after the refusals, want 1", len(ups))
	}
}

// A file over the limits is refused saying them, nothing stored: over
// the reader's limit (the page), and a body over the request's cap (413).
func TestServiceUploadTooLargeRefused(t *testing.T) {
	s := newSiteAt(t, filepath.Join(t.TempDir(), "p.db"), func(d *Deps) { d.UploadLimits = evidence.Limits{MaxBytes: 4 << 10, MaxRecords: 100} })
	c := s.client()
	data := loadCSV(t, serviceRecords()) // about 90 KiB, 1,500 records
	res := s.upload(c, map[string][2]string{"results": {"big.csv", string(data)}}, nil, nil)
	if res.StatusCode < 400 || !hasTestID(t, res.body, "service-error") {
		t.Fatalf("over the file's limit: %d", res.StatusCode)
	}
	t.Logf("over the file's limit: %d %s", res.StatusCode, testIDText(t, res.body, "service-error"))
	huge := bytes.Repeat([]byte("x"), int(4<<10+maxReportBytes+MaxBodyBytes+1))
	res = s.upload(c, map[string][2]string{"results": {"huge.csv", string(huge)}}, nil, nil)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(testIDText(t, res.body, "service-error"), "at most 4 KiB") {
		t.Errorf("over the request's cap: %d", res.StatusCode)
	}
	runs, err := s.store.Runs(t.Context(), "", 10)
	if err != nil || len(runs) != 0 {
		t.Errorf("runs stored after the refusals: %v %v", runs, err)
	}
}

// An upload is its learner's alone: to another learner, and to a visitor
// with no learner, every URL of it answers as for a run that does not
// exist, the runs list leaves it out, and they cannot delete it.
func TestServiceUploadPrivate(t *testing.T) {
	s := newSite(t)
	alice, bob := s.client(), s.client()
	id := s.uploaded(alice, "mine.csv", loadCSV(t, serviceRecords()), "100")
	other := s.uploaded(bob, "bobs.csv", loadCSV(t, serviceRecords()), "")
	missing := "u0000000000000000"
	for _, who := range []struct {
		name string
		c    *http.Client
	}{{"bob", bob}, {"nobody", nil}} {
		for _, path := range []string{"/runs/%s", "/api/runs/%s", "/runs/%s.csv", "/runs/%s/records.csv", "/runs/%s/chart.svg", "/runs/%s/panel",
			"/runs/%s/report.html", "/runs/%s/samples.csv", "/runs/compare?a=%s&b=" + other, "/ws/runs/%s", "/ws/runs/%s?pace=real"} {
			got := s.get(who.c, strings.ReplaceAll(path, "%s", id))
			none := s.get(who.c, strings.ReplaceAll(path, "%s", missing))
			if got.StatusCode != http.StatusNotFound || got.StatusCode != none.StatusCode {
				t.Errorf("%s GET %s: %d, a run that does not exist %d", who.name, path, got.StatusCode, none.StatusCode)
			}
			if strings.Contains(got.body, "mine.csv") {
				t.Errorf("%s GET %s shows the upload's name", who.name, path)
			}
		}
		if res := s.get(who.c, "/runs"); strings.Contains(res.body, id) || strings.Contains(res.body, "mine.csv") {
			t.Errorf("%s's runs list shows alice's upload", who.name)
		}
		if res := s.post(who.c, "/service/"+id+"/delete", url.Values{}); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s deleting alice's upload: %d", who.name, res.StatusCode)
		}
	}
	if res := s.get(alice, "/runs/"+id); res.StatusCode != 200 {
		t.Errorf("alice's own upload: %d", res.StatusCode)
	}
	if res := s.get(alice, "/runs/compare?a="+id+"&b="+other); res.StatusCode != 404 {
		t.Errorf("alice comparing with bob's upload: %d, want 404", res.StatusCode)
	}
	if res := s.get(bob, "/runs"); !strings.Contains(res.body, other) {
		t.Error("bob's own upload is not in his list")
	}
}

// Its learner deletes an upload (a form post, 303 back to the page), with
// its rows and records; the progress export has the learner's uploads,
// their rows and analysis and their records' URL; a reset deletes them.
func TestServiceUploadDeleteExportReset(t *testing.T) {
	s := newSite(t)
	c := s.client()
	data := loadCSV(t, serviceRecords())
	gone := s.uploaded(c, "first.csv", data, "")
	kept := s.uploaded(c, "second.csv", data, "80")
	res := s.post(c, "/service/"+gone+"/delete", url.Values{})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/service?deleted=1" {
		t.Fatalf("delete: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if res := s.get(c, "/runs/"+gone); res.StatusCode != 404 {
		t.Errorf("deleted upload: %d", res.StatusCode)
	}
	if n, _ := s.store.CountRecords(t.Context(), gone); n != 0 {
		t.Errorf("%d records of the deleted upload left", n)
	}
	if res := s.get(c, "/service?deleted=1"); !hasTestID(t, res.body, "service-deleted") || strings.Contains(res.body, "first.csv") {
		t.Error("the page after a delete")
	}

	var exp struct {
		Predictions []any `json:"predictions"`
		Uploads     []struct {
			ID         string            `json:"id"`
			RecordsURL string            `json:"records_url"`
			BudgetMS   float64           `json:"budget_ms"`
			Dataset    evidence.Dataset  `json:"dataset"`
			Rows       []result.Row      `json:"rows"`
			Analysis   evidence.Analysis `json:"analysis"`
		} `json:"uploads"`
	}
	res = s.get(c, "/api/progress?download=1")
	if err := json.Unmarshal([]byte(res.body), &exp); err != nil {
		t.Fatal(err)
	}
	if exp.Predictions == nil || len(exp.Uploads) != 1 {
		t.Fatalf("export: %s", res.body)
	}
	u := exp.Uploads[0]
	d, _ := evidence.Read("second.csv", bytes.NewReader(data), evidence.DefaultLimits())
	want := evidence.Analyze(d, evidence.Options{BudgetMS: 80})
	if u.ID != kept || u.RecordsURL != "/runs/"+kept+"/records.csv" || u.BudgetMS != 80 || u.Dataset.Name != "second.csv" ||
		!reflect.DeepEqual(u.Rows, want.Rows) || u.Analysis.Knee != want.Knee {
		t.Errorf("exported upload %+v", u)
	}
	if got := s.get(c, u.RecordsURL); got.body != string(data) {
		t.Error("the export's records URL does not give the records")
	}

	if res := s.post(c, "/progress/reset", url.Values{"confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reset: %d", res.StatusCode)
	}
	if _, err := s.store.Run(t.Context(), kept); err == nil {
		t.Error("the upload survived the reset")
	}
	if n, _ := s.store.CountRecords(t.Context(), kept); n != 0 {
		t.Errorf("%d records left after the reset", n)
	}
}

// The upload's rows as CSV parse back to the stored rows' offered rates.
func TestServiceUploadRowsCSV(t *testing.T) {
	s := newSite(t)
	c := s.client()
	id := s.uploaded(c, "r.csv", loadCSV(t, serviceRecords()), "")
	res := s.get(c, "/runs/"+id+".csv")
	recs, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
	if err != nil || len(recs) != 5 {
		t.Fatalf("rows CSV: %v %d lines", err, len(recs))
	}
	var api struct{ Rows []result.Row }
	json.Unmarshal([]byte(s.get(c, "/api/runs/"+id).body), &api)
	for i, row := range api.Rows {
		if recs[i+1][0] != strconv.FormatFloat(row.Offered, 'f', -1, 64) || recs[i+1][21] != itoa(row.Window) {
			t.Errorf("row %d: %v, stored %+v", i, recs[i+1], row)
		}
	}
}

// One address stores at most Deps.UploadsPerHour uploads an hour (each
// may be 100 MiB of the server's disk): the next is refused with when to
// try again, nothing stored; refused files do not count.
func TestServiceUploadsPerHour(t *testing.T) {
	s := newSiteAt(t, filepath.Join(t.TempDir(), "p.db"), func(d *Deps) { d.UploadsPerHour = 2 })
	c := s.client()
	data := loadCSV(t, serviceRecords())
	if res := s.upload(c, map[string][2]string{"results": {"bad.csv", "window,seq\n"}}, nil, nil); res.StatusCode != 400 {
		t.Fatalf("bad file: %d", res.StatusCode)
	}
	s.uploaded(c, "one.csv", data, "")
	s.uploaded(s.client(), "two.csv", data, "") // another learner, the same address
	res := s.upload(c, map[string][2]string{"results": {"three.csv", string(data)}}, nil, nil)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(testIDText(t, res.body, "service-error"), "Too many results were uploaded from your address") {
		t.Fatalf("third upload: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if runs, _ := s.store.Runs(t.Context(), learnerOf(t, s, c), 10); len(runs) != 1 {
		t.Errorf("%d runs listed to the first learner, want their one upload", len(runs))
	}
}

// The example (our lab through load, web/example) is added as one of the
// learner's uploads: every item of the checklist met, the knee and the
// ceiling shown, the limit for its 250 ms budget, and it is theirs alone.
func TestServiceExample(t *testing.T) {
	s := newSite(t)
	c := s.client()
	d, err := exampleDataset()
	if err != nil {
		t.Fatal(err)
	}
	want := evidence.Analyze(d, evidence.Options{BudgetMS: exampleBudgetMS})
	for _, item := range want.Checklist {
		if !item.Met {
			t.Errorf("the example does not meet %s: %s", item.ID, item.Detail)
		}
	}
	if want.Knee < 1 || want.Limit == nil || !want.Limit.Feasible || len(d.Warnings) > 0 {
		t.Errorf("the example: knee %d, limit %+v, warnings %q: want a knee after a window that kept up, a limit, no warnings", want.Knee, want.Limit, d.Warnings)
	}
	res := s.post(c, "/service/example", url.Values{})
	id, ok := strings.CutPrefix(res.Header.Get("Location"), "/runs/")
	if res.StatusCode != http.StatusSeeOther || !ok || !isUploadID(id) {
		t.Fatalf("POST /service/example: %d to %q %s", res.StatusCode, res.Header.Get("Location"), res.body)
	}
	page := s.get(c, "/runs/"+id)
	if page.StatusCode != 200 || !strings.Contains(testIDText(t, page.body, "upload-knee"), windowName(want.Knee)) ||
		!strings.Contains(testIDText(t, page.body, "upload-ceiling"), numText(want.Ceiling)) {
		t.Errorf("the example's page: %d, knee %q, ceiling %q; want %s and %s", page.StatusCode,
			testIDText(t, page.body, "upload-knee"), testIDText(t, page.body, "upload-ceiling"), windowName(want.Knee), numText(want.Ceiling))
	}
	if other := s.get(s.client(), "/runs/"+id); other.StatusCode != http.StatusNotFound {
		t.Errorf("another learner asked for the example added by one: %d, want 404", other.StatusCode)
	}
}
