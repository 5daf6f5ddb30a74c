package pep

import "testing"

func TestParseRequirement(t *testing.T) {
	for _, tc := range []struct {
		in, name, spec, url string
		ok                  bool
	}{
		{"numpy", "numpy", "", "", true},
		{"numpy==1.26.4", "numpy", "==1.26.4", "", true},
		{"numpy >= 1.26, < 2", "numpy", ">=1.26,<2", "", true},
		{"torch[opt]==2.6.0; python_version >= '3.10'", "torch", "==2.6.0", "", true},
		{"demo-core==1.0.0", "demo-core", "==1.0.0", "", true},
		{"pkg @ https://example.com/pkg-1.0-py3-none-any.whl", "pkg", "", "https://example.com/pkg-1.0-py3-none-any.whl", true},
		{"foo===weird", "foo", "===weird", "", true},
		{"foo (>=1.0)", "foo", ">=1.0", "", true},
		{"foo==1.*", "foo", "==1.*", "", true},
		{"this is not a requirement!!", "", "", "", false},
		{"numpy===", "", "", "", false},
		{"numpy==", "", "", "", false},
		{"1", "1", "", "", true}, // a project may be named "1"; the spec rejects numbers by type
		{"", "", "", "", false},
		{"numpy;", "", "", "", false},
		{"pkg @ notaurl", "", "", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseRequirement(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseRequirement(%q) error = %v, want ok %v", tc.in, err, tc.ok)
			}
			if tc.ok && (r.Name != tc.name || r.Specifier != tc.spec || r.URL != tc.url) {
				t.Errorf("ParseRequirement(%q) = %+v, want name %q spec %q url %q", tc.in, r, tc.name, tc.spec, tc.url)
			}
		})
	}
}
