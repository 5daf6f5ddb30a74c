# want: 6 size "-1GiB" is negative
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    min_shm = "-1GiB"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
