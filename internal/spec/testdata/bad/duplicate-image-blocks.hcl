# want: 11 Image name "x" is already used
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"

  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"

  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
