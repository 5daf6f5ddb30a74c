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
	for _, w := range l.Pip {
		byURL[w.URL] = Artifact{Kind: "wheel", Name: w.Name, Version: w.Version, URL: w.URL, SHA256: w.SHA256}
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

// mismatchRE finds the digests in BuildKit's checksum failures, which come
// in two forms: "digest mismatch for URL: sha256:GOT (expected: sha256:WANT)"
// and "digest mismatch sha256:GOT: sha256:WANT". The served digest is the one
// that is not the lock's. It is read for the report only: which package
// failed comes from the failing vertex's digest, not from the text.
var mismatchRE = regexp.MustCompile(`digest mismatch.*`)

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// mapSolveError turns a failure of an HTTP source vertex into a
// ChecksumError or FetchError naming the lock entry.
func mapSolveError(err error, arts map[digest.Digest]Artifact) error {
	var ve *errdefs.VertexError
	if !errors.As(err, &ve) {
		return err
	}
	a, ok := arts[digest.Digest(ve.Digest)]
	if !ok {
		return err
	}
	if m := mismatchRE.FindString(err.Error()); m != "" {
		want, _ := sha256Digest(a.SHA256)
		ce := &ChecksumError{Artifact: a, Want: want.String(), Err: err}
		for _, d := range digestRE.FindAllString(m, -1) {
			if d != ce.Want {
				ce.Got = d
				break
			}
		}
		return ce
	}
	return &FetchError{Artifact: a, Err: err}
}
