# want: 5 is not a major.minor version
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  cuda = "12"
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
