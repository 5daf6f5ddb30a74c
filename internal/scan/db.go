package scan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v6 "github.com/anchore/grype/grype/db/v6"
	v6dist "github.com/anchore/grype/grype/db/v6/distribution"
	v6inst "github.com/anchore/grype/grype/db/v6/installation"
	"github.com/anchore/grype/grype/vulnerability"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/atomicfile"
	"imagectl/internal/auth"
	"imagectl/internal/logs"
)

// Media types of a database published as an OCI artifact: one layer, the
// grype archive itself (what `grype db import` reads).
const (
	DBLayerTarGz       = "application/vnd.imagectl.grype-db.v6.tar+gzip"
	DBLayerTarZstd     = "application/vnd.imagectl.grype-db.v6.tar+zstd"
	DBConfigMediaType  = "application/vnd.imagectl.grype-db.config.v1+json"
	dbArchiveExtension = ".tar.gz"
)

// DB is an opened vulnerability database.
type DB struct {
	// Source is where the database came from: a path, or the artifact's
	// repo@sha256:... (what the vuln attestation names as the db uri).
	Source string
	// Digest is the sha256 of the archive (or of vulnerability.db for a
	// directory): the db version the attestation records with the build date.
	Digest string
	// Built is the database's build timestamp.
	Built time.Time
	// Schema is the grype schema version, e.g. v6.1.10.
	Schema string

	provider vulnerability.Provider
	reader   v6.Reader
}

// Close releases the database.
func (d *DB) Close() error {
	if d.provider != nil {
		return d.provider.Close()
	}
	return nil
}

// Version is the db version a vuln attestation records: the schema, the
// build time and the content digest.
func (d *DB) Version() string {
	return fmt.Sprintf("%s built %s %s", d.Schema, d.Built.UTC().Format(time.RFC3339), d.Digest)
}

// StaleDBError: the database was built longer ago than the limit.
type StaleDBError struct {
	Source string
	Built  time.Time
	MaxAge time.Duration
	Age    time.Duration
}

func (e *StaleDBError) Error() string {
	return fmt.Sprintf("vulnerability database %s was built %s (%s ago), older than the limit --max-db-age %s: update it (grype db, or pull today's artifact) and scan again",
		e.Source, e.Built.UTC().Format(time.RFC3339), e.Age.Round(time.Minute), e.MaxAge)
}

// CheckAge returns a *StaleDBError when d is older than maxAge at now.
func (d *DB) CheckAge(now time.Time, maxAge time.Duration) error {
	if age := now.Sub(d.Built); age > maxAge {
		return &StaleDBError{Source: d.Source, Built: d.Built, MaxAge: maxAge, Age: age}
	}
	return nil
}

// OpenDB opens the database at src: a directory holding vulnerability.db,
// a grype archive (.tar.gz, .tar.zst, .tar.xz; imported into the cache
// directory once per digest), or an OCI artifact reference (pulled with
// the registry credentials, by digest). A database older than the age
// limit (WithMaxDBAge) is a *StaleDBError and is closed.
func OpenDB(ctx context.Context, src string, opts ...Option) (*DB, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, src, o)
	if err != nil {
		return nil, err
	}
	if err := db.CheckAge(o.now(), o.maxAge); err != nil {
		db.Close()
		return nil, err
	}
	logs.From(ctx).Info("vulnerability database", "source", db.Source, "built", db.Built.UTC().Format(time.RFC3339), "schema", db.Schema)
	return db, nil
}

func openDB(ctx context.Context, src string, o *options) (*DB, error) {
	if src == "" {
		return nil, errors.New("no vulnerability database: give --db PATH or --db REGISTRY/REPO@sha256:DIGEST")
	}
	st, err := os.Stat(src)
	switch {
	case err == nil && st.IsDir():
		sum, err := fileDigest(filepath.Join(src, v6.VulnerabilityDBFileName))
		if err != nil {
			return nil, fmt.Errorf("vulnerability database %s: %w", src, err)
		}
		return readDir(src, src, sum)
	case err == nil:
		return importArchive(src, src, o)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("vulnerability database %s: %w", src, err)
	}
	ref, perr := name.ParseReference(src, o.access.NameOptions(auth.RegistryOf(src))...)
	if perr != nil || !strings.ContainsAny(src, "/:@") {
		return nil, fmt.Errorf("vulnerability database %s: no such file, and not an image reference", src)
	}
	return pullDB(ctx, ref, o)
}

// readDir opens dir/vulnerability.db.
func readDir(dir, source, digest string) (*DB, error) {
	r, err := v6.NewReader(v6.Config{DBDirPath: dir})
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: opening %s: %w", source, v6.VulnerabilityDBFileName, err)
	}
	m, err := r.GetDBMetadata()
	if err != nil || m == nil || m.BuildTimestamp == nil {
		r.Close()
		return nil, fmt.Errorf("vulnerability database %s: no build metadata (not a grype v6 database?): %v", source, err)
	}
	if m.Model != v6.ModelVersion {
		r.Close()
		return nil, fmt.Errorf("vulnerability database %s: schema v%d, this imagectl reads v%d", source, m.Model, v6.ModelVersion)
	}
	return &DB{
		Source:   source,
		Digest:   digest,
		Built:    m.BuildTimestamp.UTC(),
		Schema:   fmt.Sprintf("v%d.%d.%d", m.Model, m.Revision, m.Addition),
		provider: v6.NewVulnerabilityProvider(r),
		reader:   r,
	}, nil
}

// importArchive unpacks the grype archive at path with grype's own
// importer into cacheDir/<digest> (once: a rerun reuses it) and opens it.
func importArchive(path, source string, o *options) (*DB, error) {
	sum, err := fileDigest(path)
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: %w", source, err)
	}
	root := filepath.Join(o.cacheDir, strings.TrimPrefix(sum, "sha256:"))
	cfg := v6inst.Config{DBRootDir: root, ValidateChecksum: true}
	dir := cfg.DBDirectoryPath()
	if _, err := os.Stat(filepath.Join(dir, v6.VulnerabilityDBFileName)); err != nil {
		client, err := v6dist.NewClient(v6dist.Config{})
		if err != nil {
			return nil, fmt.Errorf("vulnerability database %s: %w", source, err)
		}
		cur, err := v6inst.NewCurator(cfg, client)
		if err != nil {
			return nil, fmt.Errorf("vulnerability database %s: %w", source, err)
		}
		if err := cur.Import(path); err != nil {
			return nil, fmt.Errorf("vulnerability database %s: importing: %w", source, err)
		}
	}
	return readDir(dir, source, sum)
}

// pullDB fetches the artifact's one layer (the archive) into the cache
// and imports it.
func pullDB(ctx context.Context, ref name.Reference, o *options) (_ *DB, err error) {
	defer func() { err = o.access.Classify(err) }()
	ropts := append(o.remoteOptions(), remote.WithContext(ctx))
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
	}
	if len(layers) != 1 {
		return nil, fmt.Errorf("vulnerability database %s: %d layers, want the one archive layer", ref, len(layers))
	}
	mt, err := layers[0].MediaType()
	if err != nil {
		return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
	}
	ext := ""
	switch string(mt) {
	case DBLayerTarGz:
		ext = ".tar.gz"
	case DBLayerTarZstd:
		ext = ".tar.zst"
	default:
		return nil, fmt.Errorf("vulnerability database %s: layer media type %q, want %s or %s", ref, mt, DBLayerTarGz, DBLayerTarZstd)
	}
	ld, err := layers[0].Digest()
	if err != nil {
		return nil, err
	}
	source := ref.Context().Digest(desc.Digest.String()).String()
	archive := filepath.Join(o.cacheDir, "blobs", ld.Hex+ext)
	if _, err := os.Stat(archive); err != nil {
		rc, err := layers[0].Compressed() // verified against ld by ggcr
		if err != nil {
			return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
		}
		defer rc.Close()
		if err := atomicfile.WriteFrom(archive, rc, 0o644); err != nil {
			return nil, fmt.Errorf("vulnerability database %s: %w", ref, err)
		}
	}
	return importArchive(archive, source, o)
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
