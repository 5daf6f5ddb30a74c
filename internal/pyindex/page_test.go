package pyindex

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const pyhosted = "https://files.pythonhosted.org/packages/"

// TestParseHTMLPages reads PEP 503 pages shaped like PyPI's (absolute
// links, data-requires-python escaped, both metadata attributes, yanked
// with and without a reason), download.pytorch.org's (root-relative links
// with %2B, "true" metadata, a file with no hash) and a plain web server's
// (relative links, other fragments, an upper-case SHA256=).
func TestParseHTMLPages(t *testing.T) {
	for _, tc := range []struct {
		page, base string
		want       []File
	}{
		{"pypi-filelock.html", "https://pypi.org/simple/filelock/", []File{
			{Filename: "filelock-3.15.4-py3-none-any.whl", URL: pyhosted + "1b/a5/8cb8e5a9e7b7b7fbab5d1e1d4b0b6a3fe7c1e2a2b2d7f3a6c1a7b8e8f2e3d4c5/filelock-3.15.4-py3-none-any.whl",
				SHA256: "6ca1fffae96225dab4c6eaf1c4f4f28cd2568d3ec2a44e15a08520504de468e7", RequiresPython: ">=3.8",
				Metadata: true, MetadataSHA256: "2a5a3e0a5cc3fe0e0d1b0f1e9b1f6e0f4b0b3d6c8f4f3c1e2d7e0a9b8c7d6e5f"},
			{Filename: "filelock-3.15.4.tar.gz", URL: pyhosted + "08/dd/49e06f09b6645156550fb9aee9cc1e59aba7efbc972d665a1bd6ae0435d4/filelock-3.15.4.tar.gz",
				SHA256: "2207938cbc1844345cb01a5a95524dae30f0ce089eba5b00378295a17e3e90cb", RequiresPython: ">=3.8"},
			{Filename: "filelock-3.16.1-py3-none-any.whl", URL: pyhosted + "b9/f8/feced7779d755758a52d1f6635d990b8d98dc0a29fa568bbe0625f18fdf3/filelock-3.16.1-py3-none-any.whl",
				SHA256: "2082e5703d51fbf98ea75855d9d5527e33d8ff23099bec374a134febee6946b0", RequiresPython: ">=3.8",
				Metadata: true, MetadataSHA256: "9d0c0d9bb9b7c8c5a4b1c0e0f2e3d4c5b6a7980f1e2d3c4b5a69788f7e6d5c4b"},
			{Filename: "filelock-3.16.1.tar.gz", URL: pyhosted + "9d/db/3ef5bb276dae18d6ec2124224403d1d67bccdbefc17af4cc8f553e341ab1/filelock-3.16.1.tar.gz",
				SHA256: "c249fbfcd5db47e5e2d6d62198e565475ee65e4831e2561c8e313fa7eb961435", RequiresPython: ">=3.8"},
			{Filename: "filelock-3.16.2-py3-none-any.whl", URL: pyhosted + "4f/8c/1e3a6e1f2a7b9c0d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9/filelock-3.16.2-py3-none-any.whl",
				SHA256: "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12", RequiresPython: ">=3.8",
				Yanked: true, YankedReason: "broken lock on NFS",
				Metadata: true, MetadataSHA256: "1111111111111111111111111111111111111111111111111111111111111111"},
			{Filename: "filelock-3.16.3-py3-none-any.whl", URL: pyhosted + "4f/8c/aa/filelock-3.16.3-py3-none-any.whl",
				SHA256: "3333333333333333333333333333333333333333333333333333333333333333", RequiresPython: ">=3.8", Yanked: true},
		}},
		{"pytorch-torch.html", "https://download.pytorch.org/whl/cu124/torch/", []File{
			{Filename: "torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl", URL: "https://download.pytorch.org/whl/cu124/torch-2.5.1%2Bcu124-cp311-cp311-linux_x86_64.whl",
				SHA256: "bd4b4b2fb4bfd0b8ef7f3ac4dc1a4e3c4b8fab7b1a9e1bf1e73e5c7b1e4d1c2a"},
			{Filename: "torch-2.6.0+cu124-cp311-cp311-linux_x86_64.whl", URL: "https://download.pytorch.org/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl",
				SHA256: "7f2ba7f7c0459320a521696f6b5bccc187f59890b23c9dfb6c49b0b87c6bfc97", RequiresPython: ">=3.9.0",
				Metadata: true, MetadataSHA256: "4e1c5e5f3b2d1a0f9e8d7c6b5a4938271605f4e3d2c1b0a9f8e7d6c5b4a39281"},
			{Filename: "torch-2.6.0+cu124-cp312-cp312-linux_x86_64.whl", URL: "https://download.pytorch.org/whl/cu124/torch-2.6.0%2Bcu124-cp312-cp312-linux_x86_64.whl",
				SHA256: "a3f2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2", RequiresPython: ">=3.9.0", Metadata: true},
			{Filename: "torch-2.6.0+cu124-cp312-cp312-win_amd64.whl", URL: "https://download.pytorch.org/whl/cu124/torch-2.6.0%2Bcu124-cp312-cp312-win_amd64.whl",
				RequiresPython: ">=3.9.0"},
		}},
		{"plain-relative.html", "http://127.0.0.1:8000/simple/demo-core/", []File{
			{Filename: "demo_core-1.0.0-py3-none-any.whl", URL: "http://127.0.0.1:8000/files/demo_core-1.0.0-py3-none-any.whl",
				SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			{Filename: "demo_core-1.1.0-py3-none-any.whl", URL: "http://127.0.0.1:8000/simple/demo-core/demo_core-1.1.0-py3-none-any.whl"},
			{Filename: "demo_core-1.2.0-py3-none-any.whl", URL: "http://127.0.0.1:8000/simple/demo-core/demo_core-1.2.0-py3-none-any.whl",
				SHA256:   "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
				Metadata: true, MetadataSHA256: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
			{Filename: "parent", URL: "http://127.0.0.1:8000/simple/demo-core/"},
		}},
	} {
		t.Run(tc.page, func(t *testing.T) {
			got, err := parseHTML(mustURL(t, tc.base), readTestdata(t, tc.page))
			if err != nil {
				t.Fatalf("parseHTML(%s) error = %v", tc.page, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parseHTML(%s) mismatch (-want +got):\n%s", tc.page, d)
			}
		})
	}
}

// TestParseJSONPage reads a PEP 691 page shaped like PyPI's: core-metadata
// as an object, false and true, an upper-case hash next to another
// algorithm, a relative URL, yanked as false, a reason and true, and a
// file with no hash or metadata keys at all.
func TestParseJSONPage(t *testing.T) {
	got, err := parseJSON(mustURL(t, "https://pypi.org/simple/filelock/"), readTestdata(t, "pypi-filelock.json"))
	if err != nil {
		t.Fatalf("parseJSON error = %v", err)
	}
	want := []File{
		{Filename: "filelock-3.16.1-py3-none-any.whl", URL: pyhosted + "b9/f8/feced7779d755758a52d1f6635d990b8d98dc0a29fa568bbe0625f18fdf3/filelock-3.16.1-py3-none-any.whl",
			SHA256: "2082e5703d51fbf98ea75855d9d5527e33d8ff23099bec374a134febee6946b0", RequiresPython: ">=3.8", Size: 16163,
			Metadata: true, MetadataSHA256: "9d0c0d9bb9b7c8c5a4b1c0e0f2e3d4c5b6a7980f1e2d3c4b5a69788f7e6d5c4b"},
		{Filename: "filelock-3.16.1.tar.gz", URL: pyhosted + "9d/db/3ef5bb276dae18d6ec2124224403d1d67bccdbefc17af4cc8f553e341ab1/filelock-3.16.1.tar.gz",
			SHA256: "c249fbfcd5db47e5e2d6d62198e565475ee65e4831e2561c8e313fa7eb961435", RequiresPython: ">=3.8", Size: 18037},
		{Filename: "filelock-3.16.2-py3-none-any.whl", URL: "https://pypi.org/packages/4f/8c/filelock-3.16.2-py3-none-any.whl",
			SHA256: "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12", RequiresPython: ">=3.8", Size: 16200,
			Yanked: true, YankedReason: "broken lock on NFS", Metadata: true},
		{Filename: "filelock-3.16.3-py3-none-any.whl", URL: pyhosted + "4f/8c/aa/filelock-3.16.3-py3-none-any.whl", Yanked: true},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseJSON mismatch (-want +got):\n%s", d)
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	base := mustURL(t, "https://pypi.org/simple/x/")
	if _, err := parseJSON(base, []byte(`{"files": [`)); err == nil || !strings.Contains(err.Error(), "PEP 691") {
		t.Errorf("parseJSON(truncated) = %v, want a PEP 691 error", err)
	}
	if _, err := parseJSON(base, []byte(`{"files":[{"url":"http://[::1"}]}`)); err == nil || !strings.Contains(err.Error(), "http://[::1") {
		t.Errorf("parseJSON(bad url) = %v, want an error naming the link", err)
	}
	if _, err := parseHTML(base, []byte(`<a href="http://[::1">x</a>`)); err == nil || !strings.Contains(err.Error(), "http://[::1") {
		t.Errorf("parseHTML(bad href) = %v, want an error naming the link", err)
	}
}

func TestMetadataField(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		ok   bool
		hash string
	}{
		{``, false, ""},
		{`false`, false, ""},
		{`true`, true, ""},
		{`{"sha256":"ABCDEF"}`, true, "abcdef"},
		{`{"sha256":"abc","md5":"x"}`, true, "abc"},
		{`{}`, true, ""},
		{`{"md5":"x"}`, true, ""},
		{`"sha256=abc"`, false, ""},
		{`null`, false, ""},
		{`[1]`, false, ""},
	} {
		ok, hash := metadataField(json.RawMessage(tc.raw))
		if ok != tc.ok || hash != tc.hash {
			t.Errorf("metadataField(%s) = %v, %q, want %v, %q", tc.raw, ok, hash, tc.ok, tc.hash)
		}
	}
}

func TestFileFromLink(t *testing.T) {
	base := mustURL(t, "https://download.pytorch.org/whl/cu124/torch/")
	for _, tc := range []struct {
		name, href, label string
		want              File
	}{
		{"absolute", "https://files.pythonhosted.org/packages/ab/cd/numpy-2.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256=ABCDEF", "",
			File{Filename: "numpy-2.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", URL: "https://files.pythonhosted.org/packages/ab/cd/numpy-2.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", SHA256: "abcdef"}},
		{"root-relative with %2B", "/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl#sha256=00ff", "",
			File{Filename: "torch-2.6.0+cu124-cp311-cp311-linux_x86_64.whl", URL: "https://download.pytorch.org/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl", SHA256: "00ff"}},
		{"relative up", "../../files/x-1.0-py3-none-any.whl", "",
			File{Filename: "x-1.0-py3-none-any.whl", URL: "https://download.pytorch.org/whl/files/x-1.0-py3-none-any.whl"}},
		{"md5 fragment is no sha256", "x-1.0.tar.gz#md5=0123", "",
			File{Filename: "x-1.0.tar.gz", URL: "https://download.pytorch.org/whl/cu124/torch/x-1.0.tar.gz"}},
		{"fragment without =", "x-1.0.tar.gz#sha256", "",
			File{Filename: "x-1.0.tar.gz", URL: "https://download.pytorch.org/whl/cu124/torch/x-1.0.tar.gz"}},
		{"surrounding space", "  x-1.0.tar.gz#sha256=aa\n", "",
			File{Filename: "x-1.0.tar.gz", URL: "https://download.pytorch.org/whl/cu124/torch/x-1.0.tar.gz", SHA256: "aa"}},
		{"no path: the label", "https://example.test/?file=1", "x-1.0.tar.gz",
			File{Filename: "x-1.0.tar.gz", URL: "https://example.test/?file=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fileFromLink(base, tc.href, tc.label)
			if err != nil {
				t.Fatalf("fileFromLink(%q) error = %v", tc.href, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("fileFromLink(%q) mismatch (-want +got):\n%s", tc.href, d)
			}
		})
	}
	if _, err := fileFromLink(base, "http://[::1", ""); err == nil {
		t.Errorf("fileFromLink(http://[::1) = nil error, want one")
	}
}

// checkFiles holds for every page parsed without an error: absolute URLs
// without a fragment, lower-case hashes, metadata hashes only with
// metadata.
func checkFiles(t *testing.T, files []File) {
	t.Helper()
	for _, f := range files {
		u, err := url.Parse(f.URL)
		if err != nil || strings.Contains(f.URL, "#") || !u.IsAbs() {
			t.Errorf("file %q: URL %q is not absolute and fragment-free (%v)", f.Filename, f.URL, err)
		}
		if f.SHA256 != strings.ToLower(f.SHA256) || f.MetadataSHA256 != strings.ToLower(f.MetadataSHA256) {
			t.Errorf("file %q: hashes %q, %q are not lower case", f.Filename, f.SHA256, f.MetadataSHA256)
		}
		if f.MetadataSHA256 != "" && !f.Metadata {
			t.Errorf("file %q: a metadata hash without metadata", f.Filename)
		}
	}
}

func FuzzParseHTML(f *testing.F) {
	for _, p := range []string{"pypi-filelock.html", "pytorch-torch.html", "plain-relative.html"} {
		f.Add(readTestdata(f, p))
	}
	f.Add([]byte(`<a href="#sha256=">`))
	f.Add([]byte(`<a href="x.whl" data-yanked data-core-metadata="sha256=AB">x</a>`))
	base := mustURL(f, "https://pypi.org/simple/x/")
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := parseHTML(base, b)
		if err != nil {
			return
		}
		checkFiles(t, files)
	})
}

func FuzzParseJSON(f *testing.F) {
	f.Add(readTestdata(f, "pypi-filelock.json"))
	f.Add([]byte(`{"files":[{"url":"x.whl#sha256=AA","yanked":"r","dist-info-metadata":{"sha256":"BB"}}]}`))
	f.Add([]byte(`{"files":null}`))
	base := mustURL(f, "https://pypi.org/simple/x/")
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := parseJSON(base, b)
		if err != nil {
			return
		}
		checkFiles(t, files)
	})
}

func FuzzMetadataField(f *testing.F) {
	for _, s := range []string{``, `false`, `true`, `{"sha256":"AB"}`, `null`, `"x"`, `{"sha256":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, hash := metadataField(json.RawMessage(b))
		if hash != "" && !ok {
			t.Errorf("metadataField(%q) = false, %q: a hash without metadata", b, hash)
		}
		if hash != strings.ToLower(hash) {
			t.Errorf("metadataField(%q) hash %q is not lower case", b, hash)
		}
	})
}

func FuzzFileFromLink(f *testing.F) {
	for _, s := range []string{
		"/whl/cu124/torch-2.6.0%2Bcu124-cp311-cp311-linux_x86_64.whl#sha256=AB",
		"../../files/x-1.0-py3-none-any.whl", "https://example.test/?q", "#", "http://[::1", "x#SHA256=cd",
	} {
		f.Add(s, "label")
	}
	base := mustURL(f, "https://download.pytorch.org/whl/cu124/torch/")
	f.Fuzz(func(t *testing.T, href, label string) {
		got, err := fileFromLink(base, href, label)
		if err != nil {
			return
		}
		checkFiles(t, []File{got})
		if got.Filename == "" && label != "" {
			t.Errorf("fileFromLink(%q, %q): empty file name, want the label at least", href, label)
		}
	})
}
