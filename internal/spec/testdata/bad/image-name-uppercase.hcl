# want: 2 must be lowercase letters
image "Demo" {
  base   = "registry.example/base:1"
  python = "3.11"

  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
