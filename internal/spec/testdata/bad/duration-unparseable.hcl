# want: 6 duration "30 seconds" is not a Go duration
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  verify {
    timeout = "30 seconds"
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
