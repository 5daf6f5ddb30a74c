// Package lock owns the lock file: the exact, hash-pinned artifacts a spec
// resolves to. The lock is the only input of the build, and what the sign,
// verify and promote stages bind to. This package is the format (schema,
// codec, platforms, diff); resolving a spec to a lock is
// internal/lock/resolve's, which runs steps on BuildKit, so that the many
// readers of a lock do not link BuildKit.
package lock

import (
	"fmt"
	"strings"

	"imagectl/internal/initconfig"
	"imagectl/internal/spec"
)

// SchemaVersion is the version of the lock file format this package writes
// and the only one it reads.
const SchemaVersion = 1

// FileName is the lock's name inside images/<image>/.
const FileName = "lock.json"

// Lock is the resolved, hash-pinned form of one concrete image.
// Every list is sorted; Marshal is byte-stable.
type Lock struct {
	SchemaVersion int    `json:"schema_version"`
	Name          string `json:"name"`
	// Spec records which spec inputs produced the lock.
	Spec Source `json:"spec"`
	// CatalogDigest is the sha256 of the compatibility catalog the lock was
	// checked against.
	CatalogDigest string `json:"catalog_digest"`
	// SourceDateEpoch is the timestamp every file and the image config get.
	SourceDateEpoch int64 `json:"source_date_epoch"`
	// Core is the frozen core: what a monthly --upgrade must not move.
	Core Core `json:"core"`
	// Frozen are further package names --upgrade must not move (from the spec).
	Frozen []string `json:"frozen,omitempty"`
	Base   Base     `json:"base"`
	// Python is the image's interpreter: lock, build and verify run it by
	// this path, never a python3 found on PATH.
	Python Python `json:"python,omitzero"`
	// Resolver is the pip wheel that resolved the closure and that the
	// build installs with (run from the wheel itself), never the base's pip.
	Resolver Wheel `json:"resolver,omitzero"`
	// Apt is the full .deb closure installed on top of the base.
	Apt []Deb `json:"apt"`
	// Pip is the full wheel closure, installed with --no-deps.
	Pip []Wheel `json:"pip"`
	// PipIndexes are the index URLs resolution used, without credentials:
	// the torch variant's index first (when the image has torch), then the
	// spec's. Each wheel records the one it came from.
	PipIndexes []string          `json:"pip_indexes,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Repos      spec.Repos        `json:"repos"`
	Runtime    initconfig.Config `json:"runtime"`
	Verify     spec.Verify       `json:"verify"`
	Policy     spec.Policy       `json:"policy"`
	// Platforms are the resolutions of the image's further platforms, one
	// per platform after the first, sorted by platform. Base, Python,
	// Resolver, Apt and Pip above are the first platform's (Base.Platform);
	// everything else is shared. A single-platform lock has none, so it
	// reads and encodes as it did before locks had platforms; an imagectl
	// that predates them refuses a lock that has them (unknown field).
	Platforms []Resolution `json:"platforms,omitempty"`
	// Digest is "sha256:<hex>" of the canonical encoding of the lock with
	// Digest empty; a mismatch means the file was edited by hand.
	Digest string `json:"digest"`
}

// Resolution is what one platform of a multi-platform image resolved to,
// inside that platform's base: the fields of Lock that differ by platform.
type Resolution struct {
	// Platform is the OCI platform, "linux/arm64".
	Platform string  `json:"platform"`
	Base     Base    `json:"base"`
	Python   Python  `json:"python"`
	Resolver Wheel   `json:"resolver,omitzero"`
	Apt      []Deb   `json:"apt"`
	Pip      []Wheel `json:"pip"`
}

// Source identifies the spec inputs of a lock.
type Source struct {
	// Path is the spec file, relative to the repository root.
	Path string `json:"path"`
	// InputsDigest is "sha256:<hex>" over the concrete image as decoded from
	// the spec (spec.Image in canonical JSON).
	InputsDigest string `json:"inputs_digest"`
}

// Core is the frozen core of an image.
type Core struct {
	CUDA         string   `json:"cuda,omitempty"`
	TorchVariant string   `json:"torch_variant,omitempty"`
	Torch        string   `json:"torch,omitempty"`
	Python       string   `json:"python"`
	NCCL         string   `json:"nccl,omitempty"`
	CUDNN        string   `json:"cudnn,omitempty"`
	DriverFloor  string   `json:"driver_floor,omitempty"`
	Archs        []string `json:"archs,omitempty"`
}

// Base is the resolved base image.
type Base struct {
	// Ref is the reference as the spec wrote it: the upstream base.
	Ref string `json:"ref"`
	// Mirror is the repository in the platform's registry that holds the
	// copy of Ref (repos.mirror plus Ref's repository path, see
	// internal/mirror); the digests were resolved there and builds pull
	// Mirror@ManifestDigest. A copy keeps the digests, so they identify the
	// upstream image too. Empty without repos.mirror (then builds pull from
	// Ref's registry). Locks without it read as before (schema version 1).
	Mirror string `json:"mirror,omitempty"`
	// IndexDigest is the digest the tag pointed at (an index or a manifest).
	IndexDigest string `json:"index_digest"`
	// ManifestDigest is the manifest of Platform inside the index.
	ManifestDigest string `json:"manifest_digest"`
	Platform       string `json:"platform"`
}

// Deb is one Debian package, fetched by URL and checked by sha256.
type Deb struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
	URL     string `json:"url"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
}

// Wheel is one Python wheel, fetched by URL and checked by sha256.
type Wheel struct {
	// Name is the normalized project name (PEP 503).
	Name     string `json:"name"`
	Version  string `json:"version"`
	Filename string `json:"filename"`
	URL      string `json:"url"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	// Index is the index the wheel was resolved from (see PipIndexes).
	Index string `json:"index,omitempty"`
}

// Python is the interpreter of an image.
type Python struct {
	// Version is the interpreter's full version, e.g. "3.11.2".
	Version string `json:"version"`
	// Path is the interpreter, e.g. "/usr/bin/python3.11".
	Path string `json:"path"`
	// Provider is "base" when the base has the interpreter, "apt" when the
	// lock installs it (python3.X and python3.X-venv, in Apt) from the
	// base's own apt repositories.
	Provider string `json:"provider"`
}

// Pull returns the reference builds pull the base by: the mirror's copy
// when there is one, else Ref's repository, pinned by the platform manifest
// digest (the index digest when the lock has none).
func (b Base) Pull() string {
	repo := b.Mirror
	if repo == "" {
		repo = b.Ref
		if i := strings.Index(repo, "@"); i >= 0 {
			repo = repo[:i]
		}
		// Strip a tag, but not a registry port: the tag is after the last '/'.
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
	}
	d := b.ManifestDigest
	if d == "" {
		d = b.IndexDigest
	}
	return repo + "@" + d
}

// String is the core in one line, for messages.
func (c Core) String() string {
	return fmt.Sprintf("torch %s (%s), cuda %s, python %s, nccl %s, cudnn %s", c.Torch, c.TorchVariant, c.CUDA, c.Python, c.NCCL, c.CUDNN)
}
