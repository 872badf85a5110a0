// Package input is how the server reads what people and programs send it:
// one strict JSON decoder (DecodeJSON) and one type for what is wrong with
// each named field of what was sent (FieldErrors).
//
// DecodeJSON reads exactly one JSON value and nothing after it but white
// space, and refuses a field the destination does not have, a name that
// matches a field's only when case is ignored (encoding/json would take
// it), a field given twice in one object, input that is not UTF-8, and
// text with control characters other than tab and line breaks
// (TextProblem). A mistake in the input comes back as a *JSONError saying
// which (not JSON, an unknown field, a field of the wrong type, something
// after the value, a field twice, bad text), so each caller words it for
// its own readers; a failure to read at all (a body
// over its limit, *http.MaxBytesError) comes back as it is. Its users: a
// sweep request (POST /api/sweeps), a class session's start (POST
// /api/sessions) and reset (POST /progress/reset) in package web, a class
// session's messages (package classroom), the lab's control API (package
// labsvc) and the LTI platforms file (package lti).
//
// FormErrors checks a form's fields the same way: each given once, but
// those its caller names as lists, and each value text.
//
// FieldErrors maps a field, by the name the sender used (a JSON name such
// as "rates", a widget parameter such as "arrivals"), to one message
// saying what is wrong with it and what is allowed, without the field's
// name (NotAllowed words the usual one: "0 is not allowed: want 1 to
// 1024"). It is the one field-error type: what a sweep's validation
// (package runner), a widget's (package model), the lab's knobs (package
// labsvc: by environment variable, "WORKERS", on its command line and in
// its control API's 400s) and the proxy's settings return, and what web's
// error path renders: in JSON, and beside each field on a page. Its Error
// reads "field: message; ..." in the order of the fields' names.
package input
