# want: 7 duration "-5s" is negative
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
    storage {
      timeout = "-5s"
    }
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
