# want: 3 names no tag or digest
image "x" {
  base   = "registry.example/base"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
