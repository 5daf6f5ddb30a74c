# want: 4 is a number, read as "3.1"
image "x" {
  base   = "registry.example/base:1"
  python = 3.10
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
