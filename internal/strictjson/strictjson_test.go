package strictjson

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	type obj struct {
		A int `json:"a"`
	}
	var o obj
	if err := Decode([]byte(" {\"a\": 1}\n\t "), &o, "obj"); err != nil || o.A != 1 {
		t.Fatalf("Decode(good) = %v, %+v", err, o)
	}
	for _, in := range []string{`{"a": 1} {}`, `{"a": 1}}`, `{"a": 1}]`, `{"a": 1} 2`, `{"a": 1},`} {
		if err := Decode([]byte(in), &obj{}, "obj"); err == nil || err.Error() != "trailing data after the obj" {
			t.Errorf("Decode(%s) = %v, want trailing data after the obj", in, err)
		}
	}
	for _, in := range []string{``, `{"a": 1`, `{"a": 1, "b": 2}`, `[1]`} {
		if err := Decode([]byte(in), &obj{}, "obj"); err == nil || strings.HasPrefix(err.Error(), "trailing") {
			t.Errorf("Decode(%q) = %v, want a decoding error", in, err)
		}
	}
}

// TestDecodeNamesNoGoType: a decoding error speaks of JSON, never of the Go
// type it decodes into.
func TestDecodeNamesNoGoType(t *testing.T) {
	type obj struct {
		A int      `json:"a"`
		B []string `json:"b"`
	}
	for _, tc := range []struct{ in, want string }{
		{``, "empty: want a JSON lock object"},
		{`[]`, "found a JSON array where a lock object belongs"},
		{`{"a": "x"}`, `field "a": found a JSON string where a JSON number belongs`},
		{`{"b": {}}`, `field "b": found a JSON object where a JSON array belongs`},
		{`{"a": 1`, "truncated"},
		{`{"c": 1}`, `unknown field "c"`},
		{`x`, "invalid JSON at byte 1"},
	} {
		err := Decode([]byte(tc.in), &obj{}, "lock object")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "json:") || strings.Contains(err.Error(), "strictjson") {
			t.Errorf("Decode(%q) = %v, want %q and no Go type", tc.in, err, tc.want)
		}
	}
}
