package web

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"capacitylab/result"
	"capacitylab/store"
)

// rowsCSV is GET /runs/{id}.csv: every column of every row.
func (s *server) rowsCSV(w http.ResponseWriter, r *http.Request, id string) error {
	v, err := s.loadRun(r, id, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="run-`+id+`.csv"`)
	cw := csv.NewWriter(w)
	head := []string{"offered", "sent", "ok", "refused", "gaveup", "error", "ok_per_sec", "p50_ms", "p99_ms", "done", "lost", "queued", "backlogged",
		"not_sent", "client_busy", "late", "send_lag_p99_ms", "mean_ms", "p95_ms", "max_ms", "n", "window", "arrivals", "seconds", "send_lag_max_ms", "clients", "note"}
	cw.Write(head)
	for _, row := range v.Rows {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		i := strconv.Itoa
		// done, queued and backlogged are -1 when the lab's counters were not read:
		// unknown, so the cell is left empty.
		opt := func(n int) string {
			if n < 0 {
				return ""
			}
			return strconv.Itoa(n)
		}
		cw.Write([]string{f(row.Offered), i(row.Sent), i(row.OK), i(row.Refused), i(row.Gaveup), i(row.Error), f(row.OKPerSec), f(row.P50MS), f(row.P99MS),
			opt(row.Done), i(row.Lost), opt(row.Queued), opt(row.Backlogged), i(row.NotSent), i(row.ClientBusy), i(row.Late), f(row.SendLagP99MS), f(row.MeanMS), f(row.P95MS), f(row.MaxMS), i(row.N),
			i(row.Window), i(row.Arrivals), f(row.Seconds), f(row.SendLagMaxMS), i(row.Clients), row.Note})
	}
	cw.Flush()
	return cw.Error()
}

// recordsCSV is GET /runs/{id}/records.csv: every raw request record, in
// loadrun's CSV format, streamed from the store.
func (s *server) recordsCSV(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	if sr, err := s.store.Run(r.Context(), id); errors.Is(err, store.ErrNoRun) || err == nil && hiddenFrom(sr, learnerID(r)) {
		return noSuchRun(id)
	} else if err != nil {
		return err
	} else if sr.Upload {
		allowUploadTime(w) // up to a million records: tens of MB
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="run-`+id+`-records.csv"`)
	cw := csv.NewWriter(w)
	if err := cw.Write(result.CSVHeader()); err != nil {
		return nil
	}
	batch := make([]result.Record, 0, 1024)
	err := s.store.EachRecord(r.Context(), id, func(rec result.Record) error {
		batch = append(batch, rec)
		if len(batch) == cap(batch) {
			err := result.AppendCSV(cw, batch)
			batch = batch[:0]
			return err
		}
		return nil
	})
	if err == nil {
		err = result.AppendCSV(cw, batch)
	}
	cw.Flush()
	if err != nil {
		// The header is out: all we can do is log and cut the download short.
		s.log.ErrorContext(r.Context(), "records download failed", "run", id, "err", err)
	}
	return nil
}
