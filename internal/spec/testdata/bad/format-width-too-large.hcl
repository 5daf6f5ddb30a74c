# want: 5 format widths and precisions above 9999 are not supported
image "x" {
  base   = "registry.example/base:1"
  python = "3.11"
  pip    = [format("%012345d", 1)]
  repos {
    staging = "registry.example/staging/x"
    release = "registry.example/x"
  }
}
