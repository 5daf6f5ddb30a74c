# want: 7 Only one runtime block is allowed
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtime {
  }
  runtime {
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
