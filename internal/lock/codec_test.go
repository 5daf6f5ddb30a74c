package lock

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"imagectl/internal/exitcode"
)

func sampleLock() *Lock {
	return &Lock{
		Name: "demo", Spec: Source{Path: "specs/demo.hcl", InputsDigest: "sha256:" + strings.Repeat("1", 64)},
		CatalogDigest: "sha256:" + strings.Repeat("2", 64), SourceDateEpoch: 1700000000,
		Core:   Core{Python: "3.11"},
		Frozen: []string{"demo-core"},
		Base:   Base{Ref: "r/b:t", IndexDigest: "sha256:" + strings.Repeat("3", 64), ManifestDigest: "sha256:" + strings.Repeat("3", 64), Platform: "linux/amd64"},
		Apt:    []Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64", URL: "http://m/jq.deb", SHA256: strings.Repeat("4", 64), Size: 1}},
		Pip:    []Wheel{{Name: "demo-util", Version: "1.0.0", Filename: "demo_util-1.0.0-py3-none-any.whl", URL: "http://i/f.whl", SHA256: strings.Repeat("5", 64), Size: 2}},
	}
}

func TestParseRejects(t *testing.T) {
	good, err := Marshal(sampleLock())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		in     []byte
		code   int
		tamper bool
	}{
		{name: "truncated", in: good[:len(good)/2], code: exitcode.Failure},
		{name: "empty", in: nil, code: exitcode.Failure},
		{name: "wrong version", in: bytes.Replace(good, []byte(`"schema_version": 1`), []byte(`"schema_version": 9`), 1), code: exitcode.Failure},
		{name: "unknown field", in: bytes.Replace(good, []byte(`"name": "demo"`), []byte(`"name": "demo", "extra": 1`), 1), code: exitcode.Failure},
		{name: "trailing data", in: append(append([]byte{}, good...), []byte("{}")...), code: exitcode.Failure},
		{name: "trailing brace", in: append(append([]byte{}, good...), []byte("}")...), code: exitcode.Failure},
		{name: "trailing bracket", in: append(append([]byte{}, good...), []byte("]")...), code: exitcode.Failure},
		{name: "version edited", in: bytes.Replace(good, []byte(`"version": "1.0.0"`), []byte(`"version": "1.0.1"`), 1), code: exitcode.LockTampered, tamper: true},
		{name: "hash edited", in: bytes.Replace(good, []byte(strings.Repeat("5", 64)), []byte(strings.Repeat("6", 64)), 1), code: exitcode.LockTampered, tamper: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("lock.json", tc.in)
			if err == nil {
				t.Fatal("Parse() = nil, want an error")
			}
			if got := exitcode.Code(err); got != tc.code {
				t.Errorf("exitcode.Code(Parse()) = %d (%v), want %d", got, err, tc.code)
			}
			var te *TamperedError
			if errors.As(err, &te) != tc.tamper {
				t.Errorf("Parse() = %v; tampered = %v, want %v", err, !tc.tamper, tc.tamper)
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "images", "demo", FileName)
	if err := Write(path, sampleLock()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("lock file does not end with a newline")
	}
	if _, err := Read(path); err != nil {
		t.Errorf("Read(Write(lock)) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	good, err := Marshal(sampleLock())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:100])
	f.Add([]byte(`{"schema_version":1,"name":"x","digest":""}`))
	f.Add([]byte(`{"apt":[{"size":-1}],"pip":null}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Parse("fuzz.json", b)
		if err != nil {
			var fe *FormatError
			var te *TamperedError
			if !errors.As(err, &fe) && !errors.As(err, &te) {
				t.Fatalf("Parse() = %T %v, want *FormatError or *TamperedError", err, err)
			}
			return
		}
		// Whatever parses re-encodes to a lock that parses to the same digest.
		out, err := Marshal(l)
		if err != nil {
			t.Fatalf("Marshal(Parse()) = %v", err)
		}
		l2, err := Parse("again.json", out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse())) = %v", err)
		}
		if l2.Digest != l.Digest {
			t.Fatalf("digest moved across a round trip: %s -> %s", l.Digest, l2.Digest)
		}
	})
}
