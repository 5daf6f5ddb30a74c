# want: 8 nccl 2.20.5 differs from the NCCL 2.21.5 that torch 2.6.0+cu118 pins
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "11.8"
  torch = "2.6.0"
  driver_floor = "525.60.13"
  nccl = "2.20.5"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
