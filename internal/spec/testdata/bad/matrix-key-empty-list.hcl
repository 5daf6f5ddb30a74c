# want: 5 Matrix key "python" has no values
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  matrix = {
    python = []
  }
  name = "x-${python}"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
