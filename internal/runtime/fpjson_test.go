//go:build !imagectl_stdjson

package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// fill sets every field reachable from v to a value derived from seed, so a
// field added to the fingerprint without updating marshalFingerprint makes
// the comparison fail.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> \"q\" \\ \t\n\x01 \u2028 é \xff", seed))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(seed*1000 + 7))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed*10+i)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed*10+i)
		}
		v.Set(s)
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

func TestFingerprintJSONMatchesEncodingJSON(t *testing.T) {
	var full Fingerprint
	fill(reflect.ValueOf(&full).Elem(), 1)
	var partial Fingerprint
	fill(reflect.ValueOf(&partial).Elem(), 2)
	partial.Caches, partial.Driver.GPUs = nil, nil
	withEmpty := full
	withEmpty.Driver.GPUs = []GPU{}
	withEmpty.Caches = []CacheDir{{Name: "x", Path: "/x"}}
	for name, fp := range map[string]Fingerprint{"zero": {}, "full": full, "partial": partial, "empty lists": withEmpty} {
		t.Run(name, func(t *testing.T) {
			want, err := json.MarshalIndent(fp, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if got := marshalFingerprint(fp); !bytes.Equal(got, want) {
				t.Errorf("marshalFingerprint differs from encoding/json:\ngot:  %s\nwant: %s", got, want)
			}
		})
	}
}
