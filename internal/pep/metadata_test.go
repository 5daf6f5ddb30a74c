package pep

import (
	"archive/zip"
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Metadata
		err      string
	}{{
		name: "headers and a body that looks like headers",
		in:   "Metadata-Version: 2.4\nName: Foo_Bar\nVersion: 1.0.post1\nRequires-Python: >=3.9\nLicense-Expression: MIT  OR\n  Apache-2.0\n\nName: not-this\nVersion: 9\n",
		want: Metadata{Name: "Foo_Bar", Version: "1.0.post1", RequiresPython: ">=3.9", LicenseExpression: "MIT OR Apache-2.0"},
	}, {
		name: "no trailing newline",
		in:   "Name: torch\nVersion: 2.11.0+cu130",
		want: Metadata{Name: "torch", Version: "2.11.0+cu130"},
	}, {
		name: "no version",
		in:   "Metadata-Version: 2.1\nName: torch\n",
		err:  "Name and Version are required",
	}, {
		name: "not headers",
		in:   "this is not metadata\n",
		err:  "core metadata",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMetadata([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseMetadata() = %+v, %v, want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseMetadata() (-want +got):\n%s", d)
			}
		})
	}
}

func zipOf(t *testing.T, files map[string]string) *bytes.Reader {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b.Bytes())
}

func TestWheelMetadata(t *testing.T) {
	for _, tc := range []struct {
		name, filename string
		files          map[string]string
		want, err      string
	}{{
		name:     "the dist-info the file name names wins",
		filename: "foo_bar-1.0-py3-none-any.whl",
		files: map[string]string{
			"vendored-0.1.dist-info/METADATA": "Name: vendored\n",
			"foo_bar-1.0.dist-info/METADATA":  "Name: foo_bar\n",
			"foo_bar/__init__.py":             "",
		},
		want: "Name: foo_bar\n",
	}, {
		name:     "the only one, whatever its case",
		filename: "Foo-2-py3-none-any.whl",
		files:    map[string]string{"foo-2.dist-info/METADATA": "Name: Foo\n"},
		want:     "Name: Foo\n",
	}, {
		name:     "nested dist-info does not count",
		filename: "x-1-py3-none-any.whl",
		files:    map[string]string{"x/vendor/y-1.dist-info/METADATA": "Name: y\n"},
		err:      "has no .dist-info/METADATA",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := zipOf(t, tc.files)
			got, err := WheelMetadata(r, r.Size(), tc.filename)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("WheelMetadata() = %q, %v, want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("WheelMetadata() = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
	if _, err := WheelMetadata(strings.NewReader("not a zip"), 9, "x-1-py3-none-any.whl"); err == nil || !strings.Contains(err.Error(), "reading wheel x-1-py3-none-any.whl") {
		t.Errorf("WheelMetadata(not a zip) = %v, want an error naming the wheel", err)
	}
}
