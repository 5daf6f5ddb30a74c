# want: 6 declares jupyter but no user block
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    jupyter { port = 8888 }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
