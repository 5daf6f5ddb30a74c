# want: 6 min_gpus must be a whole number
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  verify {
    min_gpus = 1.5
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
