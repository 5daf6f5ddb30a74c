package sign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"imagectl/internal/lock"
)

// Predicate types of the attestations imagectl writes.
const (
	// LockPredicateType: the predicate is the lock file the image was built
	// from, in its canonical encoding.
	LockPredicateType = "https://imagectl.dev/attestations/lock/v1"
	// SPDXPredicateType: an SPDX 2.3 JSON document (cosign --type spdxjson).
	SPDXPredicateType = "https://spdx.dev/Document"
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

// SPDX returns an SPDX 2.3 JSON document listing every deb and wheel of the
// lock with its version, download location and sha256, all contained in
// the image package. Creation time is the lock's SOURCE_DATE_EPOCH, so the
// document is the same for the same lock.
func SPDX(l *lock.Lock) ([]byte, error) {
	type checksum struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	type extRef struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type pkg struct {
		SPDXID           string     `json:"SPDXID"`
		Name             string     `json:"name"`
		Version          string     `json:"versionInfo,omitempty"`
		Download         string     `json:"downloadLocation"`
		FilesAnalyzed    bool       `json:"filesAnalyzed"`
		Checksums        []checksum `json:"checksums,omitempty"`
		LicenseConcluded string     `json:"licenseConcluded"`
		LicenseDeclared  string     `json:"licenseDeclared"`
		Copyright        string     `json:"copyrightText"`
		PackageFileName  string     `json:"packageFileName,omitempty"`
		ExternalRefs     []extRef   `json:"externalRefs,omitempty"`
		Comment          string     `json:"comment,omitempty"`
	}
	type rel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	type doc struct {
		Version      string `json:"spdxVersion"`
		DataLicense  string `json:"dataLicense"`
		SPDXID       string `json:"SPDXID"`
		Name         string `json:"name"`
		Namespace    string `json:"documentNamespace"`
		CreationInfo struct {
			Created  string   `json:"created"`
			Creators []string `json:"creators"`
		} `json:"creationInfo"`
		Packages      []pkg `json:"packages"`
		Relationships []rel `json:"relationships"`
	}
	const none = "NOASSERTION"
	d := doc{
		Version:     "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        l.Name,
		Namespace:   "https://imagectl.dev/spdx/" + l.Name + "/" + strings.TrimPrefix(l.Digest, "sha256:"),
	}
	d.CreationInfo.Created = time.Unix(l.SourceDateEpoch, 0).UTC().Format(time.RFC3339)
	d.CreationInfo.Creators = []string{"Tool: imagectl"}
	root := "SPDXRef-Image-" + spdxID(l.Name)
	d.Packages = append(d.Packages, pkg{
		SPDXID: root, Name: l.Name, Download: none, LicenseConcluded: none, LicenseDeclared: none, Copyright: none,
		Comment: "image built from lock " + l.Digest + " (spec " + l.Spec.Path + ")",
	})
	d.Relationships = append(d.Relationships, rel{"SPDXRef-DOCUMENT", "DESCRIBES", root})
	seen := map[string]int{}
	id := func(prefix, name string) string {
		s := "SPDXRef-" + prefix + "-" + spdxID(name)
		seen[s]++
		if n := seen[s]; n > 1 {
			s = fmt.Sprintf("%s-%d", s, n)
		}
		return s
	}
	if l.Base.Ref != "" {
		digest := l.Base.ManifestDigest
		if digest == "" {
			digest = l.Base.IndexDigest
		}
		p := pkg{SPDXID: id("Base", l.Base.Ref), Name: l.Base.Ref, Version: digest, Download: none,
			LicenseConcluded: none, LicenseDeclared: none, Copyright: none, Comment: "base image"}
		if alg, hex, ok := cutDigest(digest); ok && alg == "sha256" {
			p.Checksums = []checksum{{"SHA256", hex}}
		}
		d.Packages = append(d.Packages, p)
		d.Relationships = append(d.Relationships, rel{root, "DESCENDANT_OF", p.SPDXID})
	}
	for _, deb := range l.Apt {
		p := pkg{SPDXID: id("deb", deb.Name+"-"+deb.Arch), Name: deb.Name, Version: deb.Version,
			Download: orNone(deb.URL), Checksums: []checksum{{"SHA256", deb.SHA256}},
			LicenseConcluded: none, LicenseDeclared: none, Copyright: none,
			ExternalRefs: []extRef{{"PACKAGE-MANAGER", "purl", fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s", deb.Name, deb.Version, deb.Arch)}}}
		d.Packages = append(d.Packages, p)
		d.Relationships = append(d.Relationships, rel{root, "CONTAINS", p.SPDXID})
	}
	for _, w := range l.Pip {
		p := pkg{SPDXID: id("pypi", w.Name), Name: w.Name, Version: w.Version, PackageFileName: w.Filename,
			Download: orNone(w.URL), Checksums: []checksum{{"SHA256", w.SHA256}},
			LicenseConcluded: none, LicenseDeclared: none, Copyright: none,
			ExternalRefs: []extRef{{"PACKAGE-MANAGER", "purl", fmt.Sprintf("pkg:pypi/%s@%s", w.Name, w.Version)}}}
		d.Packages = append(d.Packages, p)
		d.Relationships = append(d.Relationships, rel{root, "CONTAINS", p.SPDXID})
	}
	return json.Marshal(d)
}

var spdxIDBad = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(s string) string { return spdxIDBad.ReplaceAllString(s, "-") }

func orNone(s string) string {
	if s == "" {
		return "NOASSERTION"
	}
	return s
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
// from l: builder, BuildKit version, lock digest, spec path, source commit,
// and the base image and lock as resolved dependencies.
func Provenance(l *lock.Lock, b Builder) ([]byte, error) {
	type rd struct {
		URI    string            `json:"uri"`
		Digest map[string]string `json:"digest,omitempty"`
		Name   string            `json:"name,omitempty"`
	}
	ext := map[string]any{
		"image":       l.Name,
		"spec":        l.Spec.Path,
		"lock_digest": l.Digest,
	}
	if b.SourceRepo != "" || b.SourceCommit != "" {
		ext["source"] = map[string]string{"repository": b.SourceRepo, "commit": b.SourceCommit}
	}
	internal := map[string]any{
		"buildkit_version":  b.BuildKitVersion,
		"source_date_epoch": l.SourceDateEpoch,
		"spec_inputs":       l.Spec.InputsDigest,
		"catalog_digest":    l.CatalogDigest,
	}
	var deps []rd
	if b.SourceCommit != "" {
		uri := "git+" + b.SourceRepo
		if b.SourceRepo == "" {
			uri = "git"
		}
		deps = append(deps, rd{URI: uri, Digest: map[string]string{"gitCommit": b.SourceCommit}, Name: "source"})
	}
	// The lock file as it is in git: its bytes' sha256 (the lock's own
	// digest, over its content without the digest field, is in
	// externalParameters).
	lockFile, err := LockPredicate(l)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(lockFile)
	deps = append(deps, rd{URI: "images/" + l.Name + "/" + lock.FileName, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}, Name: "lock"})
	if l.Base.Ref != "" {
		d := l.Base.ManifestDigest
		if d == "" {
			d = l.Base.IndexDigest
		}
		r := rd{URI: "oci://" + l.Base.Ref, Name: "base"}
		if alg, hex, ok := cutDigest(d); ok {
			r.Digest = map[string]string{alg: hex}
		}
		deps = append(deps, r)
	}
	id := b.ID
	if id == "" {
		id = DefaultBuilderID
	}
	builder := map[string]any{"id": id}
	if b.BuildKitVersion != "" {
		builder["version"] = map[string]string{"buildkit": b.BuildKitVersion}
	}
	meta := map[string]any{}
	if !b.StartedOn.IsZero() {
		meta["startedOn"] = b.StartedOn.UTC().Format(time.RFC3339)
	}
	if !b.FinishedOn.IsZero() {
		meta["finishedOn"] = b.FinishedOn.UTC().Format(time.RFC3339)
	}
	run := map[string]any{"builder": builder}
	if len(meta) > 0 {
		run["metadata"] = meta
	}
	return json.Marshal(map[string]any{
		"buildDefinition": map[string]any{
			"buildType":            BuildType,
			"externalParameters":   ext,
			"internalParameters":   internal,
			"resolvedDependencies": deps,
		},
		"runDetails": run,
	})
}
