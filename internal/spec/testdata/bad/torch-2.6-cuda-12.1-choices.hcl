# want: 5 cuda = "11.8" (a CUDA 11.8 base) with the cu118 wheels, or (2) keep the CUDA 12.1 base and set torch_variant = "cu124"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12.1"
  torch = "2.6.0"
  driver_floor = "525.60.13"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
