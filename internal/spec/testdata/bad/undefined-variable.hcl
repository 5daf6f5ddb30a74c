# want: 5 var.nope is not declared
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip_indexes = [var.nope]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
