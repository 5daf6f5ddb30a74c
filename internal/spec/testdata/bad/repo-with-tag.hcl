# want: 6 is not a valid repository
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  repos {
    staging = "registry.example/staging/x:latest"
    release = "registry.example/x"
  }
}
