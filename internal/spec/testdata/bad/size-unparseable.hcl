# want: 6 unknown unit "gigabyte"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    min_shm = "1 gigabyte"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
