# The demo image: CPU-only, built on the locally made Debian bookworm base,
# with its Python packages from the local wheel index. No public registry or
# index is reachable where the tests run, so both come from variables that
# the test harness sets (IMAGECTL_VAR_registry, IMAGECTL_VAR_wheel_index) or
# that --var overrides.

variable "registry" {
  type        = string
  default     = "127.0.0.1:5000"
  description = "host:port of the registry holding the base and receiving the builds"
}

variable "wheel_index" {
  type        = string
  default     = "http://127.0.0.1:8000/simple/"
  description = "PEP 503 simple index with the demo wheels"
}

image "demo" {
  base   = "${var.registry}/imagectl/debian-base:bookworm"
  python = "3.11"

  apt = ["jq"]
  # demo-core stands in for the big frozen core (torch, CUDA) of the real
  # images: the monthly refresh may move demo-util, never demo-core.
  pip         = ["demo-core==1.0.0", "demo-util"]
  pip_indexes = [var.wheel_index]
  frozen      = ["demo-core"]

  labels = {
    "org.opencontainers.image.title" = "imagectl demo"
  }

  repos {
    staging = "${var.registry}/imagectl/staging/demo"
    release = "${var.registry}/imagectl/demo"
  }

  runtime {
    storage {
      path       = "/storage"
      ready_file = "/storage/.ready"
      timeout    = "30s"
      required   = false
    }
    swappiness = 1
    min_shm    = "1GiB"
    tmpdir     = "/storage/tmp"
    # read by the platform and by the verify stage's init.fingerprint check
    fingerprint_path = "/storage/.imagectl/fingerprint.json"
    caches {
      inductor    = "/storage/cache/inductor"
      triton      = "/storage/cache/triton"
      tensorrt    = "/storage/cache/tensorrt"
      hf          = "/storage/cache/huggingface"
      cuda        = "/storage/cache/cuda"
      gc_max_age  = "168h"
      gc_max_size = "10GiB"
    }
  }

  verify {
    cpu_only = true
  }
}
