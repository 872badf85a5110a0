package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// FieldErrors maps a field to what is wrong with it and what is allowed
// (see the package doc). Its zero value (nil) reads as no errors.
type FieldErrors map[string]string

// Error lists every problem as "field: message", sorted by field, joined
// by "; ".
func (fe FieldErrors) Error() string {
	msgs := make([]string, 0, len(fe))
	for _, k := range fe.Names() {
		msgs = append(msgs, k+": "+fe[k])
	}
	return strings.Join(msgs, "; ")
}

// Names returns the fields with errors, sorted.
func (fe FieldErrors) Names() []string { return slices.Sorted(maps.Keys(fe)) }

// Add records msg for field unless the field has a message already: the
// first problem found with a field is the one reported.
func (fe FieldErrors) Add(field, msg string) {
	if _, ok := fe[field]; !ok {
		fe[field] = msg
	}
}

// Err returns fe as an error, or nil when it holds none, so that a
// function collecting problems in a FieldErrors can end with
// `return fe.Err()`.
func (fe FieldErrors) Err() error {
	if len(fe) == 0 {
		return nil
	}
	return fe
}

// NotAllowed is the message for a field given value when allowed is what
// it may hold: "0 is not allowed: want 1 to 1024", or "an empty value is
// not allowed: want ..." when value is empty.
func NotAllowed(value, allowed string) string {
	if value == "" {
		value = "an empty value"
	}
	return value + " is not allowed: want " + allowed
}

// Problem is the kind of mistake a JSONError reports.
type Problem int

// The mistakes DecodeJSON reports.
const (
	// NotJSON: the input is not JSON, or not of the shape wanted (an array
	// where an object goes).
	NotJSON Problem = iota + 1
	// UnknownField: an object has a field the destination does not have.
	UnknownField
	// WrongType: a field's value is of the wrong type ("many" for a
	// number).
	WrongType
	// Trailing: something other than white space follows the value.
	Trailing
)

// JSONError is a mistake in JSON sent to the server.
type JSONError struct {
	Problem Problem
	// Field is the field an UnknownField or WrongType mistake is in, by
	// its JSON name (the last part of its path: "workers", not
	// "Config.workers").
	Field string
	// Got is what a WrongType field holds, as encoding/json names it:
	// "string", "number", "number 2.5", "array", "object", "bool".
	Got string
	// Want is the Go type the field needs, for a WrongType mistake.
	Want string
	// Offset is how many bytes into the input a NotJSON mistake was found
	// (0 when it is not known).
	Offset int64
}

// Error says what is wrong in a plain sentence without the decoder's
// vocabulary, e.g. `unknown field "colour"`, `field "ref" holds a string,
// not a number`.
func (e *JSONError) Error() string {
	switch e.Problem {
	case UnknownField:
		return fmt.Sprintf("unknown field %q", e.Field)
	case WrongType:
		return fmt.Sprintf("field %q holds %s, which is not allowed there", e.Field, article(e.Got))
	case Trailing:
		return "there is more after the JSON value"
	}
	if e.Offset > 0 {
		return fmt.Sprintf("it is not a JSON value of the expected shape (the mistake is at byte %d)", e.Offset)
	}
	return "it is not a JSON value of the expected shape"
}

func article(what string) string {
	switch {
	case what == "":
		return "a value"
	case strings.HasPrefix(what, "array"), strings.HasPrefix(what, "object"):
		return "an " + what
	}
	return "a " + what
}

// DecodeJSON decodes exactly one JSON value from r into v: fields v does
// not have are refused, and nothing but white space may follow the value.
// A mistake in the input is a *JSONError; a failure to read r (such as
// *http.MaxBytesError) is returned as it is.
func DecodeJSON(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil && !isSyntax(err) {
			return err // reading failed: the body is over its limit
		}
		return &JSONError{Problem: Trailing}
	}
	return nil
}

// DecodeJSONBytes is DecodeJSON of b.
func DecodeJSONBytes(b []byte, v any) error { return DecodeJSON(bytes.NewReader(b), v) }

// jsonError turns a decoding error into a *JSONError, or returns it as it
// is when it is a failure to read.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return &JSONError{Problem: NotJSON}
		}
		field := typeErr.Field[strings.LastIndexByte(typeErr.Field, '.')+1:]
		want := ""
		if typeErr.Type != nil {
			want = typeErr.Type.String()
		}
		return &JSONError{Problem: WrongType, Field: field, Got: typeErr.Value, Want: want}
	case errors.As(err, &syntaxErr):
		return &JSONError{Problem: NotJSON, Offset: syntaxErr.Offset}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &JSONError{Problem: NotJSON}
	}
	// encoding/json reports an unknown field only in its message.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &JSONError{Problem: UnknownField, Field: strings.Trim(name, `"`)}
	}
	if strings.HasPrefix(err.Error(), "json: ") {
		return &JSONError{Problem: NotJSON} // another mistake the decoder names in its own words
	}
	return err
}

func isSyntax(err error) bool {
	var syntaxErr *json.SyntaxError
	return errors.As(err, &syntaxErr) || strings.HasPrefix(err.Error(), "invalid character")
}
