package build

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/moby/buildkit/solver/errdefs"
	"github.com/moby/buildkit/solver/pb"
	digest "github.com/opencontainers/go-digest"

	"imagectl/internal/exitcode"
	"imagectl/internal/lock"
)

// UnavailableError reports a service (buildkitd, a registry) that did not
// answer within the dial timeout.
type UnavailableError struct {
	Service string // "buildkitd" or "registry"
	Addr    string
	Err     error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s at %s is unavailable: %v", e.Service, e.Addr, e.Err)
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *UnavailableError) ExitCode() int { return exitcode.Unavailable }

// Artifact is one locked file the build fetches: a deb or a wheel.
type Artifact struct {
	Kind    string `json:"kind"` // "deb" or "wheel"
	Name    string `json:"name"`
	Version string `json:"version"`
	URL     string `json:"url"`
	SHA256  string `json:"sha256"`
}

func (a Artifact) String() string { return fmt.Sprintf("%s %s %s", a.Kind, a.Name, a.Version) }

// ChecksumError reports a fetched artifact whose sha256 is not the locked
// one: the mirror changed the file, or the lock was edited.
type ChecksumError struct {
	Artifact Artifact
	Want     string // sha256:... from the lock
	Got      string // sha256:... of what the URL served; empty if BuildKit did not say
	Err      error
}

func (e *ChecksumError) Error() string {
	got := e.Got
	if got == "" {
		got = "(not reported)"
	}
	return fmt.Sprintf("%s: sha256 mismatch for %s: lock has %s, the URL served %s; the mirror changed the file or the lock was edited: re-lock, or find out why it changed",
		e.Artifact, e.Artifact.URL, e.Want, got)
}
func (e *ChecksumError) Unwrap() error { return e.Err }

// FetchError reports a locked artifact BuildKit could not fetch.
type FetchError struct {
	Artifact Artifact
	Err      error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("fetching %s from %s: %v", e.Artifact, e.Artifact.URL, e.Err)
}
func (e *FetchError) Unwrap() error { return e.Err }

// Artifacts maps the digest of every HTTP source op in def to the lock
// entry it fetches.
func Artifacts(def *pb.Definition, l *lock.Lock) (map[digest.Digest]Artifact, error) {
	byURL := map[string]Artifact{}
	for _, d := range l.Apt {
		byURL[d.URL] = Artifact{Kind: "deb", Name: d.Name, Version: d.Version, URL: d.URL, SHA256: d.SHA256}
	}
	for _, w := range append([]lock.Wheel{l.Resolver}, l.Pip...) {
		if w.URL != "" {
			byURL[w.URL] = Artifact{Kind: "wheel", Name: w.Name, Version: w.Version, URL: w.URL, SHA256: w.SHA256}
		}
	}
	out := map[digest.Digest]Artifact{}
	for _, dt := range def.Def {
		var op pb.Op
		if err := op.UnmarshalVT(dt); err != nil {
			return nil, fmt.Errorf("parsing llb op: %w", err)
		}
		src := op.GetSource()
		if src == nil {
			continue
		}
		if a, ok := byURL[src.Identifier]; ok {
			out[digest.FromBytes(dt)] = a
		}
	}
	return out, nil
}

// BuildKit (v0.34.2, source/http/source.go) reports a checksum failure of
// an HTTP source only as text: a pkg/errors message that reaches the client
// with gRPC code Unknown and, as its only typed detail, the VertexError of
// the failing source (TestE2ETamperedHashFailsAndPushesNothing checks both
// on the real daemon, so a BuildKit that starts sending a typed error shows
// up there). Which artifact failed comes from that VertexError; only "was it
// the checksum, and what did the URL serve" is read from the text, in the
// two forms BuildKit writes:
//
//	digest mismatch for URL: sha256:GOT (expected: sha256:WANT)  (validatePinnedChecksum)
//	digest mismatch sha256:GOT: sha256:WANT                      (the fetch after the cache key; what the
//	                                                              end-to-end test gets from buildkitd v0.34.2)
var mismatchREs = []*regexp.Regexp{
	regexp.MustCompile(`digest mismatch for \S+: (sha256:[0-9a-f]{64}) \(expected: sha256:[0-9a-f]{64}\)`),
	regexp.MustCompile(`digest mismatch (sha256:[0-9a-f]{64}): sha256:[0-9a-f]{64}`),
}

// mapSolveError turns a failure of an HTTP source vertex into a
// ChecksumError or FetchError naming the lock entry. (A fetch refused with
// 401/403 is caught before the solve, by indexPreflight: buildkitd v0.34's
// HTTP source hashes the refusal's body and reports a digest mismatch.)
func mapSolveError(err error, arts map[digest.Digest]Artifact) error {
	var ve *errdefs.VertexError
	if !errors.As(err, &ve) {
		return err
	}
	a, ok := arts[digest.Digest(ve.Digest)]
	if !ok {
		return err
	}
	for _, re := range mismatchREs {
		if m := re.FindStringSubmatch(err.Error()); m != nil {
			want, _ := sha256Digest(a.SHA256)
			return &ChecksumError{Artifact: a, Want: want.String(), Got: m[1], Err: err}
		}
	}
	return &FetchError{Artifact: a, Err: err}
}
