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
