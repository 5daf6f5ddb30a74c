# want: 5 the base nvidia/cuda:11.8.0-base-ubuntu22.04 is CUDA 11.8
image "x" {
  base   = "nvidia/cuda:11.8.0-base-ubuntu22.04"
  python = "3.11"
  cuda   = "12.6"
  torch  = "2.6.0"
  driver_floor = "560.28.03"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
