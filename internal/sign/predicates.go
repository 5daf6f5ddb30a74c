package sign

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"imagectl/internal/lock"
)

// Predicate types of the attestations imagectl writes.
const (
	// LockPredicateType: the predicate is the lock file the image was built
	// from, in its canonical encoding.
	LockPredicateType = "https://imagectl.dev/attestations/lock/v1"
	// SPDXPredicateType: an SPDX 2.3 JSON document (cosign --type spdxjson).
	SPDXPredicateType = "https://spdx.dev/Document"
	// CycloneDXPredicateType: a CycloneDX 1.6 JSON BOM of the same
	// packages (cosign --type cyclonedx).
	CycloneDXPredicateType = "https://cyclonedx.org/bom"
	// ProvenancePredicateType: SLSA provenance v1 (cosign --type slsaprovenance1).
	ProvenancePredicateType = "https://slsa.dev/provenance/v1"
	// BuildType is the SLSA buildType of an imagectl build.
	BuildType = "https://imagectl.dev/buildtypes/lock/v1"
)

// LockPredicate returns the predicate of the lock attestation: the lock's
// canonical file content (what lock.Write writes).
func LockPredicate(l *lock.Lock) ([]byte, error) {
	c := *l
	c.Apt = append([]lock.Deb(nil), l.Apt...)
	c.Pip = append([]lock.Wheel(nil), l.Pip...)
	b, err := lock.Marshal(&c)
	if err != nil {
		return nil, err
	}
	if l.Digest != "" && c.Digest != l.Digest {
		return nil, fmt.Errorf("lock %q: content does not match its digest %s", l.Name, l.Digest)
	}
	return b, nil
}

// Builder describes the build for the provenance attestation.
type Builder struct {
	// ID identifies the builder (a URI), e.g. https://ci.example/imagectl.
	ID string
	// BuildKitVersion is the version of buildkitd that solved the build.
	BuildKitVersion string
	// SourceRepo and SourceCommit locate the spec and lock in git.
	SourceRepo   string
	SourceCommit string
	// StartedOn and FinishedOn bound the build; zero values are left out.
	StartedOn, FinishedOn time.Time
}

// DefaultBuilderID is the builder ID when Builder.ID is empty.
const DefaultBuilderID = "https://imagectl.dev/builder/buildkit"

// Provenance returns a SLSA provenance v1 predicate for an image built
// from l, through the in-toto attestation bindings (and checked by their
// validator): builder, BuildKit version, lock digest, spec path, source
// commit, and the base image and lock as resolved dependencies.
func Provenance(l *lock.Lock, b Builder) ([]byte, error) {
	return provenance(l, l.Base, b)
}

// provenance is Provenance of the image built on base from l (for a
// multi-platform lock, one platform's base: the lock file stays the whole
// lock).
func provenance(l *lock.Lock, base lock.Base, b Builder) ([]byte, error) {
	ext := map[string]any{
		"image":       l.Name,
		"spec":        l.Spec.Path,
		"lock_digest": l.Digest,
	}
	if b.SourceRepo != "" || b.SourceCommit != "" {
		ext["source"] = map[string]any{"repository": b.SourceRepo, "commit": b.SourceCommit}
	}
	external, err := structpb.NewStruct(ext)
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", l.Name, err)
	}
	internal, err := structpb.NewStruct(map[string]any{
		"buildkit_version":  b.BuildKitVersion,
		"source_date_epoch": l.SourceDateEpoch,
		"spec_inputs":       l.Spec.InputsDigest,
		"catalog_digest":    l.CatalogDigest,
	})
	if err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", l.Name, err)
	}
	var deps []*intoto.ResourceDescriptor
	if b.SourceCommit != "" {
		uri := "git+" + b.SourceRepo
		if b.SourceRepo == "" {
			uri = "git"
		}
		src := &intoto.ResourceDescriptor{Uri: uri, Digest: map[string]string{string(intoto.AlgorithmGitCommit): b.SourceCommit}, Name: "source"}
		if err := src.Validate(); err != nil {
			return nil, fmt.Errorf("provenance of %s: source commit %q: %w: give the full commit hash, as git rev-parse HEAD prints it", l.Name, b.SourceCommit, err)
		}
		deps = append(deps, src)
	}
	// The lock file as it is in git: its bytes' sha256 (the lock's own
	// digest, over its content without the digest field, is in
	// externalParameters).
	lockFile, err := LockPredicate(l)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(lockFile)
	deps = append(deps, &intoto.ResourceDescriptor{Uri: "images/" + l.Name + "/" + lock.FileName,
		Digest: map[string]string{string(intoto.AlgorithmSHA256): hex.EncodeToString(sum[:])}, Name: "lock"})
	if base.Ref != "" {
		d := base.ManifestDigest
		if d == "" {
			d = base.IndexDigest
		}
		r := &intoto.ResourceDescriptor{Uri: "oci://" + base.Ref, Name: "base"}
		if alg, hex, ok := cutDigest(d); ok {
			r.Digest = map[string]string{alg: hex}
		}
		deps = append(deps, r)
	}
	id := b.ID
	if id == "" {
		id = DefaultBuilderID
	}
	builder := &slsa.Builder{Id: id}
	if b.BuildKitVersion != "" {
		builder.Version = map[string]string{"buildkit": b.BuildKitVersion}
	}
	run := &slsa.RunDetails{Builder: builder}
	if !b.StartedOn.IsZero() || !b.FinishedOn.IsZero() {
		run.Metadata = &slsa.BuildMetadata{}
		if !b.StartedOn.IsZero() {
			run.Metadata.StartedOn = timestamppb.New(b.StartedOn.Truncate(time.Second))
		}
		if !b.FinishedOn.IsZero() {
			run.Metadata.FinishedOn = timestamppb.New(b.FinishedOn.Truncate(time.Second))
		}
	}
	p := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{
			BuildType:            BuildType,
			ExternalParameters:   external,
			InternalParameters:   internal,
			ResolvedDependencies: deps,
		},
		RunDetails: run,
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("provenance of %s: %w", l.Name, err)
	}
	return marshalProto(p)
}
