# want: 6 user needs uid
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    user { name = "jovyan" }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
