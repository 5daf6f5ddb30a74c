# want: 5 The matrix is empty
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = {}
  name = "x-${python}"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
