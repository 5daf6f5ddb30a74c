# want: 2 needs python
image "x" {
  base   = "registry.example/base:1"
  python = null
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
