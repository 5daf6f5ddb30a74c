// Package strictjson reads the files imagectl owns (locks, release files)
// strictly: one JSON value, no field the Go type lacks, nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode decodes b, which must hold exactly one JSON value, into v: a
// field v does not have is an error, and so is anything but white space
// after the value, a stray "}" or "]" included (json.Decoder.More does not
// see those). what names the value in that error ("lock object").
func Decode(b []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("trailing data after the %s", what)
	}
	return nil
}
