# want: 5 Too many function arguments
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip = [upper("a", "b")]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
