# want: 5 is not an http(s) URL
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip_indexes = ["not a url"]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
