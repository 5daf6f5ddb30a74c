# want: 7 leaves the GPU unused
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "11.8"
  torch = "2.6.0"
  torch_variant = "cpu"
  driver_floor = "525.60.13"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
