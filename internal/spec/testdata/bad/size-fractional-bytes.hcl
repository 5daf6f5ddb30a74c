# want: 6 whole, non-negative number of bytes
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  verify {
    allreduce_size = 1.5
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
