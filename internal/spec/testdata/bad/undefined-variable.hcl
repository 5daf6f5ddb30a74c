# want: 5 does not have an attribute named "nope"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip_indexes = [var.nope]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
