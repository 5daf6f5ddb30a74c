# want: 9 cudnn 9.1.0.70 differs from the cuDNN 9.5.1.17
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.1"
  torch = "2.6.0"
  torch_variant = "cu126"
  driver_floor = "525.60.13"
  cudnn = "9.1.0.70"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
