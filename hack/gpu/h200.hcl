# The GPU machine run's image (hack/gpu/e2e.sh): torch 2.11.0+cu130 on a base
# made from that machine's own Ubuntu 24.04 root (Python 3.12), with its
# wheels from a local index holding the machine's installed torch stack
# repacked as wheels. Base and index are test fixtures (the machine reaches
# no registry or index); the pipeline that locks, builds, signs, verifies,
# promotes and pins it is the product's.

variable "registry" {
  type        = string
  default     = "127.0.0.1:5000"
  description = "host:port of the registry holding the base and receiving the builds"
}

variable "torch_index" {
  type        = string
  default     = "http://127.0.0.1:8000"
  description = "base URL of the local wheel index (the catalog appends whl/cu130)"
}

variable "base_repo" {
  type        = string
  default     = "gpu/ubuntu-base"
  description = "repository of the base under the registry (e2e.sh's cudatwice phase builds on gpu/ubuntu-cuda-base and gpu/ubuntu-cuda-runtime)"
}

image "h200-torch2.11-cu130" {
  base          = "${var.registry}/${var.base_repo}:24.04"
  python        = "3.12"
  cuda          = "13.0"
  torch         = "2.11.0"
  torch_variant = "cu130"
  torch_index   = var.torch_index
  # CUDA 13.0's driver (catalog); the machine runs 580.159.04.
  driver_floor = "580.65.06"

  # The torch family (lint fills in torchvision 0.26.0 and torchaudio
  # 2.11.0, released with torch 2.11.0) and transformers, as the platform's
  # image has them; and the fast-moving periphery: a small wheel the run
  # publishes a newer version of, to measure the periphery-only update.
  pip = ["torchvision", "torchaudio", "transformers", "imagectl-gpu-periphery"]

  repos {
    staging = "${var.registry}/gpu/staging/h200-torch2.11-cu130"
    release = "${var.registry}/gpu/h200-torch2.11-cu130"
  }

  runtime {
    storage {
      path       = "/storage"
      ready_file = "/storage/.ready"
      timeout    = "30s"
      required   = false
    }
    swappiness       = 1
    min_shm          = "16GiB"
    tmpdir           = "/storage/tmp"
    driver_policy    = "warn"
    fingerprint_path = "/storage/.imagectl/fingerprint.json"
    caches {
      inductor    = "/storage/cache/torchinductor"
      triton      = "/storage/cache/triton"
      tensorrt    = "/storage/cache/tensorrt"
      hf          = "/storage/cache/huggingface"
      cuda        = "/storage/cache/nv"
      gc_max_age  = "720h"
      gc_max_size = "50GiB"
    }
  }

  verify {
    # The N-GPU path with N = the machine's GPUs (one here: the all-reduce
    # runs one rank, and its bus bandwidth is a skip).
    min_gpus       = 1
    allreduce_size = "256MiB"
    compile_cache  = true
    timeout        = "10m"
  }
}
