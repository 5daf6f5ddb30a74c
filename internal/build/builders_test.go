package build

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBuilders(t *testing.T) {
	bs, err := ParseBuilders([]string{"linux/arm64=tcp://arm-builder:1234", "linux/arm/v7=unix:///run/bk.sock"})
	if err != nil {
		t.Fatalf("ParseBuilders = %v", err)
	}
	if len(bs) != 2 || bs[0] != (Builder{"linux/arm64", "tcp://arm-builder:1234"}) || bs[1] != (Builder{"linux/arm/v7", "unix:///run/bk.sock"}) {
		t.Errorf("ParseBuilders = %+v", bs)
	}
	for _, tc := range []struct{ in, want string }{
		{"linux/arm64", "PLATFORM=ADDRESS"},
		{"=tcp://a:1", "PLATFORM=ADDRESS"},
		{"linux=tcp://a:1", "OS/ARCH"},
		{"linux/arm64/v8/x=tcp://a:1", "OS/ARCH"},
		{"linux/arm64=a:1", "buildkitd address"},
		{"linux/arm64=tcp://a", "tcp://HOST:PORT"},
	} {
		if _, err := ParseBuilder(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseBuilder(%q) = %v, want an error mentioning %q", tc.in, err, tc.want)
		}
	}
}

func TestTLSClientOptions(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "c.pem", "k.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	full := TLS{CACert: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "c.pem"), Key: filepath.Join(dir, "k.pem")}
	for _, tc := range []struct {
		name string
		tls  TLS
		addr string
		n    int
		err  string
	}{
		{"none", TLS{}, "tcp://a:1", 0, ""},
		{"unix gets none", full, "unix:///run/bk.sock", 0, ""},
		{"mutual", full, "tcp://a:1", 2, ""},
		{"system pool", TLS{ServerName: "bk"}, "tcp://a:1", 1, ""},
		{"cert without key", TLS{Cert: full.Cert}, "tcp://a:1", 0, "--tlscert and --tlskey"},
		{"missing key file", TLS{Cert: full.Cert, Key: filepath.Join(dir, "nope.pem")}, "tcp://a:1", 0, "--tlskey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := tc.tls.ClientOptions(tc.addr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ClientOptions = %v, want an error mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil || len(opts) != tc.n {
				t.Errorf("ClientOptions(%s) = %d options, %v; want %d", tc.addr, len(opts), err, tc.n)
			}
		})
	}
}
