# want: 5 no function named "foo"
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip = [foo("x")]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
