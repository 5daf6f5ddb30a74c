package compat

import (
	"regexp"
	"sort"
)

// A CUDA library NVIDIA ships twice: as a deb in its nvidia/cuda images
// (the runtime flavour installs cuda-libraries-X-Y, libcublas, libnccl2,
// libnpp, cuda-nvtx; gitlab.com/nvidia/container-images/cuda,
// dist/<ver>/ubuntu2204/runtime/Dockerfile) and as the nvidia-* wheel the
// torch CUDA wheels require (their Requires-Dist, shared/FACTS.md). An image
// with both carries the library twice, and two copies of it on the loader
// path.
type cudaLibrary struct {
	name       string
	deb, wheel *regexp.Regexp
}

var cudaLibraries = []cudaLibrary{
	{"cudart", regexp.MustCompile(`^cuda-cudart-\d+-\d+$`), regexp.MustCompile(`^nvidia-cuda-runtime(-cu\d+)?$`)},
	{"cublas", regexp.MustCompile(`^libcublas-\d+-\d+$`), regexp.MustCompile(`^nvidia-cublas(-cu\d+)?$`)},
	{"cufft", regexp.MustCompile(`^libcufft-\d+-\d+$`), regexp.MustCompile(`^nvidia-cufft(-cu\d+)?$`)},
	{"curand", regexp.MustCompile(`^libcurand-\d+-\d+$`), regexp.MustCompile(`^nvidia-curand(-cu\d+)?$`)},
	{"cusolver", regexp.MustCompile(`^libcusolver-\d+-\d+$`), regexp.MustCompile(`^nvidia-cusolver(-cu\d+)?$`)},
	{"cusparse", regexp.MustCompile(`^libcusparse-\d+-\d+$`), regexp.MustCompile(`^nvidia-cusparse(-cu\d+)?$`)},
	{"nvrtc", regexp.MustCompile(`^cuda-nvrtc-\d+-\d+$`), regexp.MustCompile(`^nvidia-cuda-nvrtc(-cu\d+)?$`)},
	{"nvtx", regexp.MustCompile(`^cuda-nvtx-\d+-\d+$`), regexp.MustCompile(`^nvidia-nvtx(-cu\d+)?$`)},
	{"nvjitlink", regexp.MustCompile(`^libnvjitlink-\d+-\d+$`), regexp.MustCompile(`^nvidia-nvjitlink(-cu\d+)?$`)},
	{"npp", regexp.MustCompile(`^libnpp-\d+-\d+$`), regexp.MustCompile(`^nvidia-npp(-cu\d+)?$`)},
	{"cupti", regexp.MustCompile(`^cuda-cupti-\d+-\d+$`), regexp.MustCompile(`^nvidia-cuda-cupti(-cu\d+)?$`)},
	{"nccl", regexp.MustCompile(`^libnccl2$`), regexp.MustCompile(`^nvidia-nccl(-cu\d+)?$`)},
	{"cudnn", regexp.MustCompile(`^libcudnn\d+(-cuda-\d+)?$`), regexp.MustCompile(`^nvidia-cudnn(-cu\d+)?$`)},
}

// Package is an installed deb or a wheel, with its bytes: a deb's
// Installed-Size, a wheel's file size.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Bytes   int64  `json:"bytes"`
}

// CUDADuplicate is one CUDA library an image holds twice.
type CUDADuplicate struct {
	Library string  `json:"library"`
	Deb     Package `json:"deb"`
	Wheel   Package `json:"wheel"`
}

// CUDADuplicates returns the CUDA libraries that are both among debs (the
// image's installed packages: the base's and apt's) and among wheels,
// sorted by library name. The wheel names are PEP 503 normalized.
func CUDADuplicates(debs, wheels []Package) []CUDADuplicate {
	var out []CUDADuplicate
	for _, lib := range cudaLibraries {
		d, okd := firstMatch(debs, lib.deb)
		w, okw := firstMatch(wheels, lib.wheel)
		if okd && okw {
			out = append(out, CUDADuplicate{Library: lib.name, Deb: d, Wheel: w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Library < out[j].Library })
	return out
}

func firstMatch(ps []Package, re *regexp.Regexp) (Package, bool) {
	for _, p := range ps {
		if re.MatchString(p.Name) {
			return p, true
		}
	}
	return Package{}, false
}

// nvidiaCUDATag matches an nvidia/cuda reference and captures its
// flavour: nvidia/cuda:12.1.1-runtime-ubuntu22.04 -> runtime,
// 12.1.1-cudnn8-devel-ubuntu22.04 -> devel.
var nvidiaCUDATag = regexp.MustCompile(`(^|/)nvidia/cuda:[0-9.]+-(?:cudnn\d*-)?(base|runtime|devel)-`)

// CUDABaseFlavour is the flavour of an nvidia/cuda base reference: "base"
// (cuda-cudart and cuda-compat only), "runtime" (the CUDA runtime
// libraries too), "devel" (and the toolkit), or "" for another image.
func CUDABaseFlavour(ref string) string {
	if m := nvidiaCUDATag.FindStringSubmatch(ref); m != nil {
		return m[2]
	}
	return ""
}

// nvidiaCUDAVersion matches an nvidia/cuda reference whose tag names a CUDA
// version and captures its major.minor: nvidia/cuda:11.8.0-base-ubuntu22.04
// -> 11.8.
var nvidiaCUDAVersion = regexp.MustCompile(`(^|/)nvidia/cuda:([0-9]+\.[0-9]+)(\.[0-9]+)*-`)

// BaseCUDA is the CUDA major.minor an nvidia/cuda base reference's tag
// names; false for another image or a tag without a version.
func BaseCUDA(ref string) (string, bool) {
	if m := nvidiaCUDAVersion.FindStringSubmatch(ref); m != nil {
		return m[2], true
	}
	return "", false
}
