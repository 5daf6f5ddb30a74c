# want: 5 CUDA 12.3 is not in the compatibility catalog
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.3"
  driver_floor = "525.60.13"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
