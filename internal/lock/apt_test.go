package lock

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrintURIs(t *testing.T) {
	sha := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		in      string
		want    []Deb
		wantErr string
	}{{
		name: "plain",
		in:   "'http://m/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb' jq_1.6-2.1_amd64.deb 64208 SHA256:" + sha + "\n",
		want: []Deb{{Name: "jq", Version: "1.6-2.1", Arch: "amd64", URL: "http://m/debian/pool/main/j/jq/jq_1.6-2.1_amd64.deb", SHA256: sha, Size: 64208}},
	}, {
		name: "epoch and plus survive",
		in:   "'http://m/debian/pool/main/p/perl/perl-base_5.36.0-7%2bdeb12u1_amd64.deb' perl-base_1%3a5.36.0-7+deb12u1_amd64.deb 10 SHA256:" + strings.ToUpper(sha) + "\n\n",
		want: []Deb{{Name: "perl-base", Version: "1:5.36.0-7+deb12u1", Arch: "amd64", URL: "http://m/debian/pool/main/p/perl/perl-base_5.36.0-7%2bdeb12u1_amd64.deb", SHA256: sha, Size: 10}},
	}, {
		name: "empty: everything is in the base",
		in:   "",
		want: []Deb{},
	}, {
		name:    "md5 only",
		in:      "'http://m/a_1_all.deb' a_1_all.deb 10 MD5Sum:0123456789abcdef0123456789abcdef\n",
		wantErr: "has no SHA256",
	}, {
		name:    "missing fields",
		in:      "'http://m/a_1_all.deb' a_1_all.deb 10\n",
		wantErr: "want 'URL' FILE SIZE HASH",
	}, {
		name:    "bad archive name",
		in:      "'http://m/a.deb' a.deb 10 SHA256:" + sha + "\n",
		wantErr: "is not name_version_arch.deb",
	}, {
		name:    "bad size",
		in:      "'http://m/a_1_all.deb' a_1_all.deb -3 SHA256:" + sha + "\n",
		wantErr: "is not a positive integer",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePrintURIs([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parsePrintURIs(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePrintURIs(%q) = %v", tc.in, err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("parsePrintURIs(%q) mismatch (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func TestDebFileNameRoundTrips(t *testing.T) {
	d := Deb{Name: "perl-base", Version: "1:5.36.0-7+deb12u1", Arch: "amd64"}
	n, v, a, err := splitDebName(d.fileName())
	if err != nil || n != d.Name || v != d.Version || a != d.Arch {
		t.Errorf("splitDebName(%q) = %q %q %q %v, want %q %q %q", d.fileName(), n, v, a, err, d.Name, d.Version, d.Arch)
	}
}

func TestAptScriptRejectsNonNames(t *testing.T) {
	for _, p := range []string{"jq;id", "$(id)", "JQ", "-o", "a b", "jq=1.6'"} {
		if _, err := aptScript([]string{p}, "3.11"); err == nil {
			t.Errorf("aptScript(%q) = nil error, want a rejection", p)
		}
	}
	for _, p := range []string{"jq", "python3.11", "libstdc++6", "jq=1.6-2.1", "perl-base=1:5.36.0-7+deb12u1", "libc6:amd64"} {
		if _, err := aptScript([]string{p}, "3.11"); err != nil {
			t.Errorf("aptScript(%q) = %v, want nil", p, err)
		}
	}
}
