package pep

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"torch":                 "torch",
		"Django":                "django",
		"nvidia_cudnn_cu12":     "nvidia-cudnn-cu12",
		"zope.interface":        "zope-interface",
		"Foo.Bar__baz":          "foo-bar-baz",
		"a-_.-b":                "a-b",
		"  typing_extensions\n": "typing-extensions",
		"CUDA-Toolkit":          "cuda-toolkit",
		"":                      "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseWheel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Wheel
		ok   bool
	}{
		{"pip-24.3.1-py3-none-any.whl", Wheel{Dist: "pip", Name: "pip", Version: "24.3.1", Tags: "py3-none-any"}, true},
		{"torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl",
			Wheel{Dist: "torch", Name: "torch", Version: "2.11.0+cu130", Tags: "cp312-cp312-manylinux_2_28_x86_64"}, true},
		{"nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl",
			Wheel{Dist: "nvidia_cudnn_cu12", Name: "nvidia-cudnn-cu12", Version: "9.1.0.70", Tags: "py3-none-manylinux2014_x86_64"}, true},
		{"Demo_Pkg-1.0-1-py2.py3-none-any.whl", Wheel{Dist: "Demo_Pkg", Name: "demo-pkg", Version: "1.0", Build: "1", Tags: "py2.py3-none-any"}, true},
		{"torch-2.6.0rc1-cp311-cp311-linux_x86_64.whl", Wheel{Dist: "torch", Name: "torch", Version: "2.6.0rc1", Tags: "cp311-cp311-linux_x86_64"}, true},
		{"pip-24.3.1.tar.gz", Wheel{}, false},
		{"pip-24.3.1-py3-none.whl", Wheel{}, false},
		{"a-1-2-3-py3-none-any.whl", Wheel{}, false},
		{"pip--py3-none-any.whl", Wheel{}, false},
		{".whl", Wheel{}, false},
	} {
		got, ok := ParseWheel(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseWheel(%q) = %+v, %v, want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestIsSHA256(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{strings.Repeat("a", 64), true},
		{strings.Repeat("0123456789abcdef", 4), true},
		{strings.Repeat("ABCDEF", 10) + "0123", true},
		{strings.Repeat("a", 63), false},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("g", 64), false},
		{"sha256:" + strings.Repeat("a", 57), false},
		{"", false},
	} {
		if got := IsSHA256(tc.in); got != tc.want {
			t.Errorf("IsSHA256(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
