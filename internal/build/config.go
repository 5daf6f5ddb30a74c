package build

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"

	"imagectl/internal/build/layerplan"
	"imagectl/internal/initconfig"
	"imagectl/internal/lock"
)

// Labels imagectl adds to every image besides org.opencontainers.image.*.
const (
	// LabelLockDigest is the digest of the lock the image was built from.
	LabelLockDigest = "dev.imagectl.lock.digest"
	// LabelSpecName is the image's name in its spec.
	LabelSpecName = "dev.imagectl.spec.name"
	// LabelSpecPath is the spec file the lock came from.
	LabelSpecPath = "dev.imagectl.spec.path"
)

// ImageConfig returns the image config: the base's config with its
// environment kept (LD_LIBRARY_PATH, NVIDIA_*, CUDA_VERSION, ...) and the
// venv put first on the base's PATH, the lock's env over both (a spec's
// env wins, PATH included), the init as entrypoint, the OCI labels plus
// the lock digest and spec name, and SOURCE_DATE_EPOCH as creation time.
// base is the base image's config (zero when unknown).
func ImageConfig(l *lock.Lock, base ocispecs.Image) ocispecs.Image {
	created := time.Unix(l.SourceDateEpoch, 0).UTC()
	img := ocispecs.Image{
		Created:  &created,
		Platform: platform,
		Config:   base.Config,
		RootFS:   ocispecs.RootFS{Type: "layers"},
		History:  historyOf(l, base, created),
	}
	if p, err := platformOf(l); err == nil {
		img.Platform = p
	}
	if base.OS != "" {
		img.Platform = base.Platform
	}

	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range base.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	// The base's PATH is kept (nvidia/cuda puts /usr/local/nvidia/bin and
	// /usr/local/cuda/bin on it) with the venv in front; without one, the
	// Debian default.
	set("PATH", withVenv(env["PATH"]))
	if len(l.Pip) > 0 {
		set("VIRTUAL_ENV", initconfig.VenvPath)
		// Before the lock's env: a spec's env may set it empty to opt out.
		set("PIP_CONSTRAINT", ConstraintPath)
	}
	for _, k := range slices.Sorted(maps.Keys(l.Env)) {
		set(k, l.Env[k])
	}
	img.Config.Env = nil
	for _, k := range order {
		img.Config.Env = append(img.Config.Env, k+"="+env[k])
	}

	img.Config.Entrypoint = []string{initconfig.InitPath}
	switch rt := l.Runtime; {
	case rt.SSH != nil || rt.Jupyter != nil:
		// `docker run IMAGE` runs the access services alone (the init's
		// mode with no command), not the base's shell.
		img.Config.Cmd = nil
		if img.Config.ExposedPorts == nil {
			img.Config.ExposedPorts = map[string]struct{}{}
		}
		if rt.SSH != nil {
			img.Config.ExposedPorts[strconv.Itoa(cmp.Or(rt.SSH.Port, 22))+"/tcp"] = struct{}{}
		}
		if rt.Jupyter != nil {
			img.Config.ExposedPorts[strconv.Itoa(cmp.Or(rt.Jupyter.Port, 8888))+"/tcp"] = struct{}{}
		}
	case len(img.Config.Cmd) == 0:
		img.Config.Cmd = []string{"/bin/bash"}
	}

	labels := maps.Clone(base.Config.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ocispecs.AnnotationCreated] = created.Format(time.RFC3339)
	labels[ocispecs.AnnotationTitle] = l.Name
	labels[ocispecs.AnnotationBaseImageName] = l.Base.Ref
	labels[ocispecs.AnnotationBaseImageDigest] = l.Base.ManifestDigest
	labels[LabelLockDigest] = l.Digest
	labels[LabelSpecName] = l.Name
	if l.Spec.Path != "" {
		labels[LabelSpecPath] = l.Spec.Path
	}
	maps.Copy(labels, l.Labels)
	img.Config.Labels = labels
	return img
}

// historyOf keeps the base's history and adds one entry per planned layer,
// so that `docker history` and registries show what each layer holds.
func historyOf(l *lock.Lock, base ocispecs.Image, created time.Time) []ocispecs.History {
	h := slices.Clone(base.History)
	for _, layer := range layerplan.Of(l).Layers {
		if layer.Kind == layerplan.KindBase {
			continue
		}
		by := "imagectl build: " + layer.Name
		switch {
		case len(layer.Debs) > 0:
			by += " (" + itoa(len(layer.Debs)) + " debs)"
		case len(layer.Wheels) > 0:
			by += " (" + wheelList(layer.Wheels) + ")"
		}
		h = append(h, ocispecs.History{Created: &created, CreatedBy: by, Comment: "imagectl"})
	}
	return h
}

// withVenv puts the venv's bin first on basePath (once); an empty basePath
// gives systemPath.
func withVenv(basePath string) string {
	if basePath == "" {
		return systemPath
	}
	bin := initconfig.VenvPath + "/bin"
	parts := []string{bin}
	for _, p := range strings.Split(basePath, ":") {
		if p != bin {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ":")
}

func itoa(n int) string { return strconv.Itoa(n) }
