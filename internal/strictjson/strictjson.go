// Package strictjson reads the files imagectl owns (locks, release files)
// strictly: one JSON value, no field the Go type lacks, nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Decode decodes b, which must hold exactly one JSON value, into v: a
// field v does not have is an error, and so is anything but white space
// after the value, a stray "}" or "]" included (json.Decoder.More does not
// see those). what names the value in that error ("lock object").
func Decode(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{what: what, err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("trailing data after the %s", what)
	}
	return nil
}

// Error is a value that did not decode. Its message says what was wrong in
// JSON's terms (an array where an object belongs, an empty file) and names
// no Go type; Unwrap gives encoding/json's error.
type Error struct {
	what string
	err  error
}

func (e *Error) Unwrap() error { return e.err }

func (e *Error) Error() string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(e.err, io.EOF):
		return fmt.Sprintf("empty: want a JSON %s", e.what)
	case errors.Is(e.err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("truncated: the JSON %s ends early", e.what)
	case errors.As(e.err, &te):
		if te.Field == "" {
			return fmt.Sprintf("found a JSON %s where a %s belongs", te.Value, e.what)
		}
		return fmt.Sprintf("field %q: found a JSON %s where a JSON %s belongs", te.Field, te.Value, jsonKind(te.Type))
	case errors.As(e.err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	return strings.TrimPrefix(e.err.Error(), "json: ")
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "value"
}
