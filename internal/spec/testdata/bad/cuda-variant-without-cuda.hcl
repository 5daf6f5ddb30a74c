# want: 6 torch_variant cu124 needs a CUDA base
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  torch = "2.6.0"
  torch_variant = "cu124"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
