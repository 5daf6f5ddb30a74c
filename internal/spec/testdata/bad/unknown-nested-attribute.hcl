# want: 7 Did you mean "ready_file"?
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    storage {
      redy_file = "/storage/.ready"
    }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
