# The platform's monthly PyTorch 2.6 images: CUDA 11.8 and 12.1, each for
# Python 3.10 and 3.11 (four concrete images from one matrix). The monthly
# refresh re-locks them; torch, CUDA, Python and the pins below stay frozen.
#
# The sources come from three variables, each defaulting to the public
# source, so that a machine with internet access needs no flags and
#   imagectl lock specs/pytorch.hcl --var base_registry=... --var torch_index=... --var pypi_index=...
# runs against a platform's mirrors (docs/lock.md).

variable "registry" {
  type        = string
  default     = "127.0.0.1:5000"
  description = "host:port of the registry receiving the builds"
}

variable "base_registry" {
  type        = string
  default     = "docker.io"
  description = "registry (host[:port][/path]) the nvidia/cuda bases are pulled from: Docker Hub by default, or a mirror of it"
}

variable "torch_index" {
  type        = string
  default     = "https://download.pytorch.org"
  description = "base URL of the PyTorch wheel index; the lock appends the variant's path (whl/cu118, whl/cu124) and takes torch, triton and nvidia-* from it alone"
}

variable "pypi_index" {
  type        = string
  default     = "https://pypi.org/simple"
  description = "PEP 503 simple index for every other package (PyPI or a mirror of it)"
}

defaults {
  torch       = "2.6.0"
  torch_index = var.torch_index

  # 525.60.13 is the lowest driver that runs any CUDA 12.x under minor-version
  # compatibility, and it is above what CUDA 11.8 needs (450.80.02 under minor
  # compatibility). It is the platform's own requirement, so both CUDA lines
  # share it.
  driver_floor = "525.60.13"

  # Every torch 2.6.0 CUDA wheel pins NCCL 2.21.5 and the cu118/cu124 ones
  # cuDNN 9.1.0.70; writing them here makes a catalog change visible in review.
  nccl  = "2.21.5"
  cudnn = "9.1.0.70"

  # The platform's image: the torch family, transformers and JupyterLab for
  # the researcher who lives in it, with the tools the platform offers
  # (tmux, git, sshd). torchvision and torchaudio name no version: lint
  # fills in the ones released with torch (0.21.0 and 2.6.0 for 2.6.0,
  # from the compatibility catalog) and refuses any other; like torch they
  # come from the variant's PyTorch index alone.
  apt = ["ca-certificates", "git", "openssh-server", "tini", "tmux"]
  pip = [
    "numpy", "pillow", "tqdm",
    "torchvision", "torchaudio",
    "transformers>=4.30",
    "jupyterlab",
  ]
  pip_indexes = [var.pypi_index]

  env = {
    PYTHONUNBUFFERED = "1"
    PIP_NO_CACHE_DIR = "1"
  }
  labels = {
    "org.opencontainers.image.vendor" = "platform"
  }

  repos {
    staging = "${var.registry}/platform/staging/pytorch"
    release = "${var.registry}/platform/pytorch"
    # `imagectl mirror` copies each nvidia/cuda base here by digest (every
    # platform); lock resolves and builds pull the base from here, so a
    # monthly rebuild never depends on the upstream still serving it.
    mirror = "${var.registry}/platform/mirror"
  }

  runtime {
    storage {
      path       = "/storage"
      ready_file = "/storage/.ready"
      timeout    = "120s"
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
    # The workload runs as jovyan (1000:1000, HOME /home/jovyan), the
    # Kubeflow notebook user; the init does root's work first.
    user {
      name = "jovyan"
      uid  = 1000
      gid  = 1000
      home = "/home/jovyan"
    }
    # sshd by key only; the keys come from a mounted secret or the variable.
    ssh {
      authorized_keys_file = "/etc/imagectl/ssh/authorized_keys"
      authorized_keys_env  = "SSH_AUTHORIZED_KEYS"
    }
    # JupyterLab on $NB_PORT (8888) under $NB_PREFIX; never without a token
    # (JUPYTER_TOKEN or the mounted file) or a hashed password.
    jupyter {
      command    = ["jupyter", "lab"]
      token_file = "/etc/imagectl/jupyter/token"
    }
  }

  verify {
    # Two GPUs at least: the bus-bandwidth floor needs an all-reduce over two
    # or more, and a one-GPU runner would pass with the floor skipped (lint
    # warns about that combination).
    min_gpus       = 2
    min_busbw_gbps = 100
    allreduce_size = "256MiB"
    compile_cache  = true
    timeout        = "15m"
  }

  policy {
    ssh_key_only       = true
    forbidden_packages = ["telnetd", "rsh-server"]
  }
}

image "pytorch-2.6" {
  matrix = {
    cuda   = ["11.8", "12.1"]
    python = ["3.10", "3.11"]
  }
  name   = "pytorch-2.6-cu${replace(cuda, ".", "")}-py${python}"
  cuda   = cuda
  python = python

  # The -base flavour (cuda-cudart and cuda-compat only), chosen over
  # -runtime: the torch cu118/cu124 wheels bring their own CUDA libraries
  # (nvidia-cublas, -cufft, -curand, -cusolver, -cusparse, -nccl, -nvrtc,
  # -nvtx, cuDNN 9) from pip, so a -runtime base would ship each of them
  # twice, with two copies on the loader path (docs/build.md, "CUDA shipped
  # twice"; imagectl build reports any library an image holds twice).
  base = "${var.base_registry}/nvidia/cuda:${{ "11.8" = "11.8.0", "12.1" = "12.1.1" }[cuda]}-base-ubuntu22.04"

  # torch 2.6.0 publishes no cu121 wheel (only cu118, cu124, cu126; cu121
  # stops at 2.5.1). For the CUDA 12.1 images we choose, explicitly, the
  # cu124 wheels on the 12.1 base: they bring their own CUDA 12.4 runtime
  # and run on the 12.1 base's driver requirement under CUDA minor-version
  # compatibility, which needs a driver >= 525.60.13 (driver_floor above).
  # The other honest choice would have been the cu118 wheels, i.e. not a
  # CUDA 12 image at all. The 11.8 images use the matching cu118 wheels.
  torch_variant = cuda == "12.1" ? "cu124" : "cu118"

  labels = {
    "org.opencontainers.image.title" = "pytorch 2.6 (CUDA ${cuda}, Python ${python})"
  }
}
