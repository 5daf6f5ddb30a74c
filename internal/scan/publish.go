package scan

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of the database artifact's manifest: what it is, readable
// without pulling it.
const (
	AnnotationDBBuilt  = "dev.imagectl.vulndb.built"
	AnnotationDBSchema = "dev.imagectl.vulndb.schema"
)

// PushDB publishes the grype archive at path as an OCI artifact at ref
// (one layer, the archive; the config names its build date and schema)
// and returns the manifest digest. The archive is opened first, so a file
// that is not a grype v6 database is never published.
func PushDB(ctx context.Context, path string, ref name.Reference, opts ...Option) (_ v1.Hash, err error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return v1.Hash{}, err
	}
	defer func() { err = o.access.Classify(err) }()
	dir, err := os.MkdirTemp("", "imagectl-vulndb-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(dir)
	o.cacheDir = dir
	db, err := importArchive(path, path, o)
	if err != nil {
		return v1.Hash{}, err
	}
	db.Close()
	mt := types.MediaType(DBLayerTarGz)
	if strings.HasSuffix(path, ".tar.zst") {
		mt = DBLayerTarZstd
	} else if !strings.HasSuffix(path, ".tar.gz") {
		return v1.Hash{}, fmt.Errorf("%s: publish a .tar.gz or .tar.zst grype archive", path)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(path) }, tarball.WithMediaType(mt))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", path, err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, DBConfigMediaType)
	img = mutate.Annotations(img, map[string]string{
		AnnotationDBBuilt:  db.Built.UTC().Format(time.RFC3339),
		AnnotationDBSchema: db.Schema,
	}).(v1.Image)
	if err := remote.Write(ref, img, append(o.remoteOptions(), remote.WithContext(ctx))...); err != nil {
		return v1.Hash{}, fmt.Errorf("publishing %s to %s: %w", path, ref, err)
	}
	return img.Digest()
}
