package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNoRecord is returned by Record when the learner has not saved a record
// for the block.
var ErrNoRecord = errors.New("no record saved")

// Record is what a learner wrote in a record block: the fields by name
// (the lessons package names five: setting, criterion, measurement, number,
// reverse) and the id of the saved run they attached ("" = none).
type Record struct {
	Lesson    string            `json:"lesson"`
	Block     string            `json:"block"`
	Fields    map[string]string `json:"fields"`
	Run       string            `json:"run,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// SaveRecord stores the learner's record for r.Block, replacing an earlier
// one (only the latest version is kept; its creation time stays and
// UpdatedAt is set to now). It returns the record as stored. The caller
// checks the fields and that the run belongs to the learner.
func (s *Store) SaveRecord(ctx context.Context, learner string, r Record) (Record, error) {
	if r.Block == "" {
		return Record{}, errors.New("store: SaveRecord needs a block")
	}
	if err := s.ensureLearner(ctx, learner); err != nil {
		return Record{}, err
	}
	fields := r.Fields
	if fields == nil {
		fields = map[string]string{}
	}
	js, err := json.Marshal(fields)
	if err != nil {
		return Record{}, err
	}
	now := s.stamp()
	_, err = s.db.ExecContext(ctx, `INSERT INTO records (learner, lesson, block, fields_json, run_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (learner, block) DO UPDATE SET lesson = excluded.lesson, fields_json = excluded.fields_json,
			run_id = excluded.run_id, updated_at = excluded.updated_at`,
		learner, r.Lesson, r.Block, string(js), r.Run, now, now)
	s.states.forget(learner)
	if err != nil {
		return Record{}, err
	}
	return s.Record(ctx, learner, r.Block)
}

// Record returns the learner's record for a block, or an error wrapping
// ErrNoRecord.
func (s *Store) Record(ctx context.Context, learner, block string) (Record, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+recordColumns+` FROM records WHERE learner = ? AND block = ?`, learner, block)
	r, err := scanRecord(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, fmt.Errorf("block %s: %w", block, ErrNoRecord)
	}
	return r, err
}

const recordColumns = `lesson, block, fields_json, run_id, created_at, updated_at`

// recordsQuery reads a learner's records (?1), optionally for one lesson
// (?2), in lesson and block order.
func recordsQuery(oneLesson bool) string {
	q := `SELECT ` + recordColumns + ` FROM records WHERE learner = ?1`
	if oneLesson {
		q += ` AND lesson = ?2`
	}
	return q + ` ORDER BY lesson, block`
}

func scanRecord(row scanner) (Record, error) {
	var r Record
	var fields, created, updated string
	if err := row.Scan(&r.Lesson, &r.Block, &fields, &r.Run, &created, &updated); err != nil {
		return Record{}, err
	}
	if err := json.Unmarshal([]byte(fields), &r.Fields); err != nil {
		return Record{}, fmt.Errorf("record %s: %w", r.Block, err)
	}
	r.CreatedAt, r.UpdatedAt = parseTime(created), parseTime(updated)
	return r, nil
}

// records lists the learner's records, for one lesson or (lesson == "")
// all, in lesson and block order.
func (s *Store) records(ctx context.Context, learner, lesson string) ([]Record, error) {
	stmt, args := s.recordsAll, []any{learner}
	if lesson != "" {
		stmt, args = s.recordsLesson, []any{learner, lesson}
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	out := []Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, r)
	}
	return out, closeRows(rows)
}
