# want: 5 torch 2.7.0 is not in the compatibility catalog
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  torch = "2.7.0"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
