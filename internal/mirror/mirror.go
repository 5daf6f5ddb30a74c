// Package mirror copies the upstream base images of specs into the
// platform's own registry: by digest, with every platform of the upstream
// index, and without uploading anything the mirror already holds. The lock
// then resolves the base in the mirror and builds pull it from there, so a
// pinned lock still builds when the upstream has deleted the tag (NVIDIA
// removes end-of-life CUDA tags).
//
// A base name maps to the mirror by its repository path:
// nvidia/cuda:12.1.1-runtime-ubuntu22.04 with the mirror
// registry.example/platform/mirror is copied to
// registry.example/platform/mirror/nvidia/cuda@sha256:<index digest> and
// tagged 12.1.1-runtime-ubuntu22.04 there (the tag last).
package mirror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"imagectl/internal/auth"
	"imagectl/internal/exitcode"
	"imagectl/internal/logs"
	"imagectl/internal/spec"
)

// Target returns the repository under mirror that holds base's repository:
// mirror + "/" + the repository path of base ("nvidia/cuda"; Docker Hub's
// official images keep their "library/" prefix).
func Target(base, mirror string) (name.Repository, error) {
	ref, err := name.ParseReference(base)
	if err != nil {
		return name.Repository{}, fmt.Errorf("base %q: %w", base, err)
	}
	m, err := name.NewRepository(mirror)
	if err != nil {
		return name.Repository{}, fmt.Errorf("mirror %q: %w", mirror, err)
	}
	repo, err := name.NewRepository(m.Name() + "/" + ref.Context().RepositoryStr())
	if err != nil {
		return name.Repository{}, fmt.Errorf("mirror of %q under %q: %w", base, mirror, err)
	}
	return repo, nil
}

// Ref returns base's place in the mirror: the target repository with base's
// tag or digest.
func Ref(base, mirror string) (name.Reference, error) {
	repo, err := Target(base, mirror)
	if err != nil {
		return nil, err
	}
	ref, _ := name.ParseReference(base) // Target parsed it
	switch r := ref.(type) {
	case name.Digest:
		return repo.Digest(r.DigestStr()), nil
	case name.Tag:
		return repo.Tag(r.TagStr()), nil
	}
	return nil, fmt.Errorf("base %q: neither a tag nor a digest", base)
}

// Result is one base copied (or found already copied) into the mirror.
type Result struct {
	// Source is the upstream reference as the spec wrote it.
	Source string `json:"source"`
	// Images are the spec images that use this base, sorted.
	Images []string `json:"images"`
	// Digest is the upstream digest (an index, or a single manifest), which
	// the copy keeps.
	Digest string `json:"digest"`
	// Target is the copy, mirror-repository@Digest.
	Target string `json:"target"`
	// Tag is the tag set in the mirror (mirror-repository:tag) when the
	// source names a tag.
	Tag string `json:"tag,omitempty"`
	// Platforms are the platforms of the index ("linux/amd64", ...), or the
	// single manifest's.
	Platforms []string `json:"platforms"`
	// Present means the mirror already held Digest: nothing was copied.
	Present bool `json:"present"`
	// Uploaded is what this run sent to the mirror.
	Uploaded Uploads `json:"uploaded"`
}

// Uploads counts what was written to the mirror, as seen on the wire.
type Uploads struct {
	// Blobs are layers and configs uploaded (committed).
	Blobs int `json:"blobs"`
	// Bytes are the request-body bytes of blob uploads.
	Bytes int64 `json:"bytes"`
	// Mounted are blobs mounted from another repository of the same
	// registry instead of uploaded.
	Mounted int `json:"mounted"`
	// Manifests are manifests and indexes written (by digest or tag).
	Manifests int `json:"manifests"`
}

// NotConfiguredError reports an image whose spec names no mirror.
type NotConfiguredError struct{ Image, File string }

func (e *NotConfiguredError) Error() string {
	return fmt.Sprintf("%s: image %s has no repos.mirror: nothing to mirror its base to", e.File, e.Image)
}

// UnavailableError reports a registry that could not be reached.
type UnavailableError struct {
	Registry string
	Err      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("registry %s is unavailable: %v", e.Registry, e.Err)
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// ExitCode implements exitcode.Coder.
func (e *UnavailableError) ExitCode() int { return exitcode.Unavailable }

// unavailable makes err an UnavailableError when no connection to reg
// could be made.
func unavailable(reg string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &UnavailableError{Registry: reg, Err: err}
	}
	return err
}

// Run copies the base of every image into its repos.mirror, each distinct
// (base, mirror) pair once, in the order the images come. It stops at the
// first failure; what was copied before stays (a copy is complete or
// absent: the mirror's tag is moved only after the digest is there).
func Run(ctx context.Context, imgs []spec.Image, opts ...Option) ([]Result, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, err
	}
	type key struct{ base, mirror string }
	var (
		order []key
		users = map[key][]string{}
	)
	for _, img := range imgs {
		if img.Repos.Mirror == "" {
			return nil, &NotConfiguredError{Image: img.Name, File: img.File}
		}
		k := key{img.Base, img.Repos.Mirror}
		if _, ok := users[k]; !ok {
			order = append(order, k)
		}
		users[k] = append(users[k], img.Name)
	}
	results := make([]Result, 0, len(order))
	for _, k := range order {
		dst, err := Target(k.base, k.mirror)
		if err != nil {
			return results, fmt.Errorf("image %s: %w", users[k][0], err)
		}
		r, err := copyBase(ctx, k.base, dst, o)
		if err != nil {
			return results, o.access.Classify(fmt.Errorf("image %s: %w", users[k][0], err))
		}
		r.Images = slices.Sorted(slices.Values(users[k]))
		results = append(results, r)
	}
	return results, nil
}

// Copy copies src (a tag or a digest) into the repository dst, keeping its
// digest and every platform of its index, and sets src's tag in dst last.
// Blobs and manifests dst already has are not uploaded again.
func Copy(ctx context.Context, src string, dst name.Repository, opts ...Option) (Result, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return Result{}, err
	}
	r, err := copyBase(ctx, src, dst, o)
	return r, o.access.Classify(err)
}

func copyBase(ctx context.Context, src string, dst name.Repository, o *options) (Result, error) {
	log := logs.From(ctx)
	srcRef, err := name.ParseReference(src)
	if err != nil {
		return Result{}, fmt.Errorf("base %q: %w", src, err)
	}
	// Every request of this copy goes through one counter, so the result
	// says exactly what reached the wire.
	c := &counter{rt: o.transport}
	ropts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain), remote.WithTransport(c)}, o.access.RetryOptions()...)
	ropts = append(ropts, o.remote...)

	desc, err := remote.Get(srcRef, ropts...)
	if err != nil {
		return Result{}, unavailable(srcRef.Context().RegistryStr(), fmt.Errorf("reading upstream base %s: %w", src, err))
	}
	r := Result{Source: src, Digest: desc.Digest.String(), Target: dst.Digest(desc.Digest.String()).String()}
	if r.Platforms, err = platforms(desc); err != nil {
		return Result{}, fmt.Errorf("reading upstream base %s: %w", src, err)
	}
	target := dst.Digest(desc.Digest.String())

	have, err := exists(target, ropts)
	if err != nil {
		return Result{}, unavailable(dst.RegistryStr(), fmt.Errorf("looking up %s in the mirror: %w", target, err))
	}
	r.Present = have
	if !have {
		log.Info("mirroring base", "source", src, "target", target.String(), "platforms", strings.Join(r.Platforms, ","))
		if !desc.MediaType.IsIndex() && !desc.MediaType.IsImage() {
			return Result{}, fmt.Errorf("base %s is a %s, neither an image index nor an image manifest", src, desc.MediaType)
		}
		// An index with every child and blob, or an image with its blobs.
		if err := remote.Push(target, desc, ropts...); err != nil {
			return Result{}, fmt.Errorf("copying %s to %s: %w", src, target, err)
		}
	}

	if tag, ok := srcRef.(name.Tag); ok {
		dstTag := dst.Tag(tag.TagStr())
		r.Tag = dstTag.String()
		cur, err := remote.Head(dstTag, ropts...)
		if err != nil && !auth.NotFound(err) {
			return Result{}, fmt.Errorf("looking up %s in the mirror: %w", dstTag, err)
		}
		if err != nil || cur.Digest != desc.Digest {
			if err := remote.Tag(dstTag, desc, ropts...); err != nil {
				return Result{}, fmt.Errorf("tagging %s: %w", dstTag, err)
			}
		}
	}
	r.Uploaded = c.uploads()
	log.Info("base mirrored", "source", src, "target", r.Target, "present", r.Present,
		"uploaded_blobs", r.Uploaded.Blobs, "uploaded_bytes", r.Uploaded.Bytes, "manifests", r.Uploaded.Manifests)
	return r, nil
}

// platforms lists the platforms of an index's manifests, or the single
// image's.
func platforms(desc *remote.Descriptor) ([]string, error) {
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(im.Manifests))
		for _, m := range im.Manifests {
			p := "unknown"
			if m.Platform != nil {
				p = m.Platform.String()
			}
			out = append(out, p)
		}
		return out, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	return []string{(&v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String()}, nil
}

func exists(ref name.Reference, ropts []remote.Option) (bool, error) {
	if _, err := remote.Head(ref, ropts...); err != nil {
		if auth.NotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
