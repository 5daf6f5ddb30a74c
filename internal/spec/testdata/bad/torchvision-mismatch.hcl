# want: 9 torch 2.6.0 is released with torchvision 0.21.0
image "x" {
  base   = "nvidia/cuda:12.1.1-base-ubuntu22.04"
  python = "3.11"
  cuda   = "12.1"
  torch  = "2.6.0"
  torch_variant = "cu124"
  driver_floor  = "525.60.13"
  pip = ["numpy", "torchvision==0.20.1"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
