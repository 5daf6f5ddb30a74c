# want: 5 Blocks of type "runtim" are not expected here
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  runtim {
  }
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
