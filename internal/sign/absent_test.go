package sign_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/sign"
)

// failing is an in-process registry that answers 500 to what fail selects.
type failing struct {
	inner http.Handler
	fail  atomic.Value // func(*http.Request) bool
}

func (f *failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if sel, _ := f.fail.Load().(func(*http.Request) bool); sel != nil && sel(r) {
		http.Error(w, "injected", http.StatusInternalServerError)
		return
	}
	f.inner.ServeHTTP(w, r)
}

// Only "not there" is absent: with nothing written, VerifySignature and
// VerifyAttestations say so (Absent) and Missing lists everything; a
// registry 500 on the .att manifest, or on an attestation's layer (which
// cosign would read lazily and report as "no matching attestations"), is
// an error that is not Absent, and Missing and Inspect fail instead of
// calling the digest unsigned.
func TestOnlyNotThereIsAbsent(t *testing.T) {
	ctx := context.Background()
	f := &failing{inner: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	s := httptest.NewServer(f)
	t.Cleanup(s.Close)
	reg := strings.TrimPrefix(s.URL, "http://")
	priv, pub := keyPair(t)
	l := testLock()
	ref := pushBuilt(t, reg+"/staging/pytorch", l)
	once := sign.WithRemoteOptions(remote.WithRetryBackoff(remote.Backoff{Steps: 1}))

	if err := sign.VerifySignature(ctx, ref, pub, once); !sign.Absent(err) || !sign.Unsigned(err) {
		t.Errorf("VerifySignature(nothing written) = %v, want an absent, unsigned error", err)
	}
	if _, err := sign.VerifyAttestations(ctx, ref, sign.SPDXPredicateType, pub, once); !sign.Absent(err) {
		t.Errorf("VerifyAttestations(nothing written) = %v, want an absent error", err)
	}
	missing, err := sign.Missing(ctx, ref, l, pub, once)
	if err != nil || len(missing) != 1+len(sign.Required(sign.SigningKey, false)) {
		t.Errorf("Missing(nothing written) = %q, %v; want the signature and every build attestation", missing, err)
	}

	if err := sign.SignAndAttest(ctx, ref, l, sign.Builder{SourceCommit: testCommit}, sign.WithKey(priv, []byte(testPassword))); err != nil {
		t.Fatal(err)
	}
	if missing, err := sign.Missing(ctx, ref, l, pub, once); err != nil || len(missing) != 0 {
		t.Fatalf("Missing(signed) = %q, %v; want nothing", missing, err)
	}

	for _, tc := range []struct {
		name string
		fail func(*http.Request) bool
	}{
		{"500 on the .att manifest", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ".att") }},
		{"500 on the .sig manifest", func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ".sig") }},
		{"500 on every blob", func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.fail.Store(tc.fail)
			defer f.fail.Store(func(*http.Request) bool { return false })
			if missing, err := sign.Missing(ctx, ref, l, pub, once); err == nil || sign.Absent(err) {
				t.Errorf("Missing = %q, %v; want an error that is not Absent", missing, err)
			}
			if _, err := sign.Inspect(ctx, ref, pub, once); err == nil || sign.Absent(err) {
				t.Errorf("Inspect = %v, want an error that is not Absent", err)
			}
		})
	}
	t.Run("500 on an attestation layer", func(t *testing.T) {
		f.fail.Store(func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") })
		defer f.fail.Store(func(*http.Request) bool { return false })
		if _, err := sign.VerifyAttestations(ctx, ref, sign.LockPredicateType, pub, once); err == nil || sign.Absent(err) {
			t.Errorf("VerifyAttestations = %v, want an error that is not Absent", err)
		}
	})
}
