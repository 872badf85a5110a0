package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
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
	// DuplicateField: an object has the field twice.
	DuplicateField
	// BadText: the input is not UTF-8 (Offset says where), or a string in
	// it holds a control character other than tab and line breaks (Field
	// says where; "" for a field's name).
	BadText
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
	// Want is the Go type the field needs, for a WrongType mistake; for an
	// UnknownField mistake, the field's exact name when it differs from
	// one only in case ("rates" for "RATES").
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
		if e.Want != "" {
			return fmt.Sprintf("unknown field %q (field names are exact: %q)", e.Field, e.Want)
		}
		return fmt.Sprintf("unknown field %q", e.Field)
	case DuplicateField:
		return fmt.Sprintf("the field %q is given twice; give each field once", e.Field)
	case BadText:
		switch {
		case e.Got == "":
			return fmt.Sprintf("it is not UTF-8 text (the first invalid byte is at byte %d); JSON must be UTF-8", e.Offset)
		case e.Field == "":
			return fmt.Sprintf("a field name holds %s; text may not hold control characters other than tab and line breaks", e.Got)
		}
		return fmt.Sprintf("field %q holds %s; text may not hold control characters other than tab and line breaks", e.Field, e.Got)
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

// DecodeJSON decodes exactly one JSON value from r into v: the input must
// be UTF-8; fields v does not have are refused, and so are names that
// match a field's only when case is ignored (encoding/json would take
// "RATES" for "rates"); a field given twice in one object is refused;
// no string may hold a control character other than tab, line feed and
// carriage return; and nothing but white space may follow the value. A
// mistake in the input is a *JSONError; a failure to read r (such as
// *http.MaxBytesError) is returned as it is.
func DecodeJSON(r io.Reader, v any) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return DecodeJSONBytes(b, v)
}

// DecodeJSONBytes is DecodeJSON of b.
func DecodeJSONBytes(b []byte, v any) error {
	if !utf8.Valid(b) {
		return &JSONError{Problem: BadText, Offset: int64(firstInvalid(b))}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &JSONError{Problem: Trailing}
	}
	// The value is well-formed: walk it again for what encoding/json lets
	// through.
	w := json.NewDecoder(bytes.NewReader(b))
	return walkJSON(w, reflect.TypeOf(v), "")
}

// firstInvalid is the offset of the first byte of b that is not UTF-8.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// walkJSON reads the next value from dec, which has been decoded into a
// t once already, and refuses a field given twice, a field of a struct
// named in another case than its own, and a string with a control
// character other than tab and line breaks. field is the name the value
// is under, for the error. A nil t (an interface, json.RawMessage, a
// type that decodes itself) still has its fields and strings checked.
func walkJSON(dec *json.Decoder, t reflect.Type, field string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	t = plain(t)
	switch tok := tok.(type) {
	case string:
		return checkText(tok, field)
	case json.Delim:
		if tok == '[' {
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for dec.More() {
				if err := walkJSON(dec, elem, field); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return jsonError(err)
			}
			key, _ := kt.(string)
			if err := checkText(key, ""); err != nil {
				return err
			}
			if seen[key] {
				return &JSONError{Problem: DuplicateField, Field: key}
			}
			seen[key] = true
			sub := elem
			if fields != nil {
				ft, ok := fields[key]
				if !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return &JSONError{Problem: UnknownField, Field: key, Want: name}
						}
					}
					return &JSONError{Problem: UnknownField, Field: key}
				}
				sub = ft
			}
			if err := walkJSON(dec, sub, key); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

// plain is t without pointers, or nil for a type whose values decode
// themselves (json.RawMessage and other json.Unmarshalers) or an
// interface: walkJSON then checks no field names against it.
func plain(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return nil
	}
	return t
}

// jsonFields maps the JSON names of struct t's fields, as encoding/json
// decodes them (tags, embedded structs' fields promoted unless a field
// nearer the top has the name), to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var embedded []reflect.Type
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && f.Tag.Get("json") == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			if et := derefType(f.Type); et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	for _, et := range embedded {
		for name, ft := range jsonFields(et) {
			if _, ok := out[name]; !ok {
				out[name] = ft
			}
		}
	}
	return out
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// checkText refuses s if it holds a control character other than tab,
// line feed and carriage return: a *JSONError of BadText for field.
func checkText(s, field string) error {
	if r, bad := TextProblem(s); bad {
		return &JSONError{Problem: BadText, Field: field, Got: controlName(r)}
	}
	return nil
}

// TextProblem reports the first rune of s that text sent to the server may
// not hold: a control character other than tab, line feed and carriage
// return, or utf8.RuneError for bytes that are not UTF-8.
func TextProblem(s string) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return r, true
			}
		}
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return r, true
		}
	}
	return 0, false
}

// FormErrors checks a form's fields as DecodeJSON checks a JSON body's:
// each field given once, but those named in repeatable (a list, or a
// slider beside its number box, sends a field more than once), and each
// value text (TextProblem). It returns what is wrong with each field.
func FormErrors(form url.Values, repeatable ...string) FieldErrors {
	fe := FieldErrors{}
	for name, vals := range form {
		if r, bad := TextProblem(name); bad {
			fe.Add("form", "a field's name "+TextError(r))
			continue
		}
		if len(vals) > 1 && !slices.Contains(repeatable, name) {
			fe.Add(name, fmt.Sprintf("is given %d times; give it once", len(vals)))
			continue
		}
		for _, v := range vals {
			if r, bad := TextProblem(v); bad {
				fe.Add(name, TextError(r))
				break
			}
		}
	}
	return fe
}

// TextError words what TextProblem found in a field's text: "holds a
// control character (U+0007); ..." or "is not valid UTF-8 text".
func TextError(r rune) string {
	if r == utf8.RuneError {
		return "is not valid UTF-8 text; send text as UTF-8"
	}
	return "holds " + controlName(r) + "; text may not hold control characters other than tab and line breaks"
}

func controlName(r rune) string {
	if r == utf8.RuneError {
		return "bytes that are not UTF-8"
	}
	return fmt.Sprintf("a control character (U+%04X)", r)
}

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
